import type { Knex } from 'knex';

// An API key may end on its own: a key made for a contractor or a trial stops working without anyone revoking it.
// Null means it lasts until revoked.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.timestamp('expires_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('expires_at');
  });
}
