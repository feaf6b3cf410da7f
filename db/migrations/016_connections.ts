import type { Knex } from 'knex';

// Connections: authorized instances of a connector in a workspace (a SQL database today). Agents refer to them by
// name; the credentials are sealed (db/secret-box.ts), never stored or answered in plain text.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('connections', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('name').notNullable();
    t.text('kind').notNullable();
    /** What is not secret: host, port, database, user, whether writes are allowed, limits. */
    t.jsonb('config').notNullable();
    t.text('credentials_sealed').notNullable();
    /** connected | needs_reauthorization | revoked | failing */
    t.text('status').notNullable();
    t.text('status_detail');
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true });
    t.unique(['workspace_id', 'name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('connections');
}
