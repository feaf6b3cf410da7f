import type { Knex } from 'knex';

// An Inbox thread whose mail came in through a connected mailbox (an email.received trigger that keeps its messages
// in the Inbox) names that connection: email.reply answers it from the mailbox, over its SMTP server, rather than
// from the agent's own address. Null for mail sent to the agent's address.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('inbox_threads', (t) => {
    t.text('connection');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('inbox_threads', (t) => {
    t.dropColumn('connection');
  });
}
