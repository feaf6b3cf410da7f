import type { Knex } from 'knex';

// Triggers (schedules, webhooks, forms, chains) and the per-agent activity timeline.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('triggers', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.text('kind').notNullable(); // schedule | webhook | form | chain
    t.text('name').notNullable();
    t.jsonb('config').notNullable();
    // Webhook signing secret, encrypted with the service's secret key (never stored in plain text).
    t.text('secret_encrypted');
    // Chains only: the agent whose completion fires this trigger (indexed for the lookup at run end).
    t.uuid('source_agent_id').references('agents.id').onDelete('cascade');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['agent_id']);
    t.index(['source_agent_id']);
  });

  await knex.schema.alterTable('runs', (t) => {
    t.uuid('trigger_id').references('triggers.id').onDelete('set null');
  });

  await knex.schema.createTable('agent_events', (t) => {
    t.bigIncrements('id');
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('kind').notNullable();
    t.text('message').notNullable();
    t.uuid('run_id');
    t.uuid('trigger_id');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.index(['agent_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('agent_events');
  await knex.schema.alterTable('runs', (t) => t.dropColumn('trigger_id'));
  await knex.schema.dropTableIfExists('triggers');
}
