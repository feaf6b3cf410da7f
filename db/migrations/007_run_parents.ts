import type { Knex } from 'knex';

// A run started by a call_agent node knows the run, item and node that called it, so run details can link
// back to the caller (and a caller's called runs can be found).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.uuid('parent_run_id').references('runs.id').onDelete('set null');
    t.integer('parent_item_seq');
    t.text('parent_node_id');
    t.index(['parent_run_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.dropIndex(['parent_run_id']);
    t.dropColumn('parent_node_id');
    t.dropColumn('parent_item_seq');
    t.dropColumn('parent_run_id');
  });
}
