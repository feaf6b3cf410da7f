import type { Knex } from 'knex';

// Run Mode links: a public page per agent where anyone with the link starts runs and sees their results.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('run_links', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.text('name').notNullable();
    t.text('token_hash').notNullable().unique(); // SHA-256 of the token; the token itself is shown once
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    t.index(['agent_id']);
  });
  await knex.schema.alterTable('runs', (t) => {
    t.uuid('run_link_id').references('run_links.id').onDelete('set null');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => t.dropColumn('run_link_id'));
  await knex.schema.dropTableIfExists('run_links');
}
