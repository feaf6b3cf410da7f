import type { Knex } from 'knex';

// A run the web opened answers its caller before its workflow has started (api/run-dispatch.ts). The flag says
// the web starts it, so the web's start sweep may start it again should the first start never land (the process
// died, Temporal was unreachable); runs that workflows start as their children never carry it. The partial index
// holds only the runs still waiting for their first step: a run leaves it as soon as its items are stored or it
// ends, so the sweep reads a handful of rows however many runs there are.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.boolean('start_pending').notNullable().defaultTo(false);
  });
  await knex.raw(
    `create index runs_start_pending on runs (created_at) where start_pending and status = 'running' and total = 0`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists runs_start_pending');
  await knex.schema.alterTable('runs', (t) => {
    t.dropColumn('start_pending');
  });
}
