import type { Knex } from 'knex';

// Request budgets shared by every web process (api/rate-limit.ts): fixed windows for public endpoints and sign-in
// failures, token buckets for API keys.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_windows', (t) => {
    t.text('key').primary();
    t.timestamp('window_start', { useTz: true }).notNullable();
    t.integer('count').notNullable();
  });
  await knex.schema.createTable('rate_buckets', (t) => {
    t.text('key').primary();
    t.double('tokens').notNullable();
    t.timestamp('at', { useTz: true }).notNullable();
    t.boolean('allowed').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('rate_buckets');
  await knex.schema.dropTable('rate_windows');
}
