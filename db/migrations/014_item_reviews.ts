import type { Knex } from 'knex';

// Items a flag_for_review node stopped for a person: the review queue. Each waits in its page's workflow (recorded
// here, as approvals are) until a reviewer accepts, rejects or sends it on; who decided and when is kept.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('item_reviews', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable();
    t.uuid('run_id').notNullable().references('runs.id').onDelete('CASCADE');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable(); // the flag node
    t.text('workflow_id').notNullable(); // the workflow that waits on the decision
    t.text('reason').notNullable();
    t.text('status').notNullable().defaultTo('pending'); // pending | accepted | rejected | sent_on
    t.jsonb('decision');
    t.text('decided_by');
    t.timestamp('decided_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'status', 'created_at']);
  });
  // An item waits on at most one review at a time (it may be flagged again after being sent on).
  await knex.raw(
    `create unique index item_reviews_one_pending on item_reviews (run_id, item_seq) where status = 'pending'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('item_reviews');
}
