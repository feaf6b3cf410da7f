import type { Knex } from 'knex';

// What an event trigger has done with each event it read (activities/event-triggers.ts): started a run (its id),
// batched it, filtered it out or skipped it. A poll reads some events again — the late-commit window of a table, a
// poll tried again after a crash, a poll that stopped at a pause — and acts only on those it has not handled, without
// writing the same filtered-out event on the timeline twice; a run its crashed attempt opened is started. Kept two
// days (a table's window is at most one).
//
// And the Inbox's loop guards (activities/inbox-reply.ts): an inbound message's Auto-Submitted or Precedence header
// when it says the mail was sent by a machine (`auto-submitted: auto-replied`, `precedence: bulk`), which no reply
// answers. Null for mail a person sent, and for mail received before this.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('trigger_events', (t) => {
    t.uuid('trigger_id').notNullable().references('triggers.id').onDelete('cascade');
    t.text('event_id').notNullable();
    /** The run it started (or found started by an earlier attempt); null when it started none of its own. */
    t.uuid('run_id').references('runs.id').onDelete('set null');
    t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['trigger_id', 'event_id']);
    t.index(['trigger_id', 'seen_at']);
  });
  await knex.schema.alterTable('inbox_messages', (t) => {
    t.text('auto_submitted');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('inbox_messages', (t) => {
    t.dropColumn('auto_submitted');
  });
  await knex.schema.dropTable('trigger_events');
}
