import type { Knex } from 'knex';

// An MCP connection's tools as its server last listed them, asked by someone who may manage connections: reading
// them (the editor, a read-only API key) never calls the server with the connection's stored headers.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('connections', (t) => {
    t.jsonb('tools');
    t.timestamp('tools_listed_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('connections', (t) => {
    t.dropColumn('tools');
    t.dropColumn('tools_listed_at');
  });
}
