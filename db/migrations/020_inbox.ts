import type { Knex } from 'knex';

// The Inbox: each agent's address, and mail threads of requests it received and replies it sent. An inbound
// message is unique per agent by its Message-ID (a redelivery is stored once and starts no second run); an
// outbound one by the Message-ID derived from its tool call's idempotency key (a retried send stores it once).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('inbox_addresses', (t) => {
    t.uuid('agent_id').primary().references('agents.id').onDelete('cascade');
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    /** Lower case; the address is <local_part>@CADRE_INBOX_DOMAIN. Kept when the agent is renamed. */
    t.text('local_part').notNullable().unique();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('inbox_threads', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.text('subject').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_message_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['agent_id', 'last_message_at']);
  });
  await knex.schema.createTable('inbox_messages', (t) => {
    t.uuid('id').primary();
    t.uuid('thread_id').notNullable().references('inbox_threads.id').onDelete('cascade');
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.text('direction').notNullable(); // inbound | outbound
    t.text('message_id').notNullable();
    t.text('in_reply_to');
    t.jsonb('references').notNullable().defaultTo('[]');
    t.text('from_address').notNullable();
    t.jsonb('to_addresses').notNullable().defaultTo('[]');
    t.text('subject').notNullable();
    t.text('text').notNullable();
    t.jsonb('attachments').notNullable().defaultTo('[]');
    /** The receiving server's SPF/DKIM/DMARC verdicts (Authentication-Results, Received-SPF), as they came. */
    t.text('authentication_results');
    t.text('received_spf');
    /** The run an inbound message started, or the run whose email.reply sent an outbound one. */
    t.uuid('run_id').references('runs.id').onDelete('set null');
    /** Why an inbound message started no run (the agent was paused, the plan's runs were used up…). */
    t.text('note');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['agent_id', 'message_id']);
    t.index(['thread_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('inbox_messages');
  await knex.schema.dropTable('inbox_threads');
  await knex.schema.dropTable('inbox_addresses');
}
