import type { Knex } from 'knex';

// OAuth 2.0 connections: an authorization started (the link a person follows to the provider) and not yet finished.
// Like single sign-on logins, the state is stored hashed and the PKCE code verifier sealed; each is used once and
// expires after a few minutes.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('connection_authorizations', (t) => {
    t.text('state_hash').primary();
    t.uuid('connection_id').notNullable().references('connections.id').onDelete('cascade');
    t.text('code_verifier').notNullable(); // sealed
    /** Who started it (an admin's email or an API key's name), for the audit log. */
    t.text('started_by').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('connection_authorizations');
}
