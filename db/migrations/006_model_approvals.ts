import type { Knex } from 'knex';

// Tool calls a model makes inside an llm step follow the approval policy too. Such a step stops with its
// conversation saved here (claim check: never in a Temporal history) and resumes in a new activity once a
// reviewer has decided. One step can wait on several calls, so an approval is keyed by the call as well.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('approvals', (t) => {
    t.text('call_id'); // the model's tool_use id; null for approval and tool nodes
  });
  await knex.raw('alter table approvals drop constraint approvals_run_id_item_seq_node_id_unique');
  // NULLS NOT DISTINCT (Postgres ≥ 15): node approvals (call_id null) stay one per item and node.
  await knex.raw(
    'alter table approvals add constraint approvals_call_unique unique nulls not distinct (run_id, item_seq, node_id, call_id)',
  );

  await knex.schema.createTable('model_checkpoints', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable();
    t.jsonb('conversation').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['run_id', 'item_seq', 'node_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('model_checkpoints');
  await knex.raw('alter table approvals drop constraint approvals_call_unique');
  await knex('approvals').whereNotNull('call_id').delete();
  await knex.schema.alterTable('approvals', (t) => {
    t.dropColumn('call_id');
    t.unique(['run_id', 'item_seq', 'node_id']);
  });
}
