import type { Knex } from 'knex';

// Skills: reusable instructions (Markdown or text) uploaded to a workspace and attached to agents by name.
// Uploading under a name that exists adds a version; versions are never changed, so what a run used stays
// readable. Deleting a skill archives it. What each item's model step loaded is recorded per run.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('skills', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('name').notNullable();
    t.integer('latest_version').notNullable().defaultTo(0);
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Runs started before this keep using it; later ones do not find it. Uploading it again clears it.
    t.timestamp('archived_at', { useTz: true });
    t.unique(['workspace_id', 'name']);
  });

  await knex.schema.createTable('skill_versions', (t) => {
    t.uuid('id').primary();
    t.uuid('skill_id').notNullable().references('skills.id').onDelete('cascade');
    t.integer('version').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.text('content').notNullable();
    t.integer('size').notNullable();
    t.text('sha256').notNullable();
    t.text('created_by').notNullable();
    // A run uses the newest version created before the run was (runs.created_at).
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['skill_id', 'version']);
  });

  // The skills (user ones with their version) each item's model step had in its context: run details' "context used".
  await knex.schema.createTable('run_skill_context', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable();
    t.jsonb('skills').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['run_id', 'item_seq', 'node_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('run_skill_context');
  await knex.schema.dropTableIfExists('skill_versions');
  await knex.schema.dropTableIfExists('skills');
}
