import type { Knex } from 'knex';

// A scheduled run's metadata: the time its schedule fired for (Temporal's scheduled time, which a catch-up after an
// outage starts later). With `trigger_id` it says when and why the run started, so neither is part of its input.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.timestamp('fired_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.dropColumn('fired_at');
  });
}
