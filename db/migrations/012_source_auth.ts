import type { Knex } from 'knex';

// A URL source may be an API endpoint that wants credentials: its Authorization header, sealed with the
// service key (db/secret-box.ts), sent only to the URL's own origin.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('source_documents', (t) => {
    t.text('auth_header_sealed');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('source_documents', (t) => t.dropColumn('auth_header_sealed'));
}
