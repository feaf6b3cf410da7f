import type { Knex } from 'knex';

// Event triggers poll a connected system (workflows/event-poll.ts): where each one has read up to, and the last error
// it met (told once on the agent's timeline, not at every poll). The events themselves are deduplicated by the
// idempotency keys of the runs they start, or by the delivery keys of the batch they join.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('trigger_cursors', (t) => {
    t.uuid('trigger_id').primary().references('triggers.id').onDelete('cascade');
    /** The connector's own high-water mark (a mailbox's last UID, a bucket's newest key, a table's last id). */
    t.text('cursor');
    t.text('last_error');
    t.timestamp('polled_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('trigger_cursors');
}
