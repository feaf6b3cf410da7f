import type { Knex } from 'knex';

// The agent creation wizard (api/routes/wizard.ts): one row per session, from the goal to the agent it created.
// The conversation with the model stays here after the agent exists: it is the agent's creation history.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('wizard_sessions', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('created_by').notNullable();
    t.text('goal').notNullable();
    /** Files uploaded with the goal: [{name, format, size, source}] — each became a source of that name. */
    t.jsonb('files').notNullable().defaultTo('[]');
    /** [{question, why, answer}] */
    t.jsonb('questions').notNullable().defaultTo('[]');
    /** The six parts: job, success_criteria, edge_cases, triggers, tools, runtime_parameters. */
    t.jsonb('instructions');
    /** [{kind, purpose}]: the integrations the instructions need. */
    t.jsonb('connections').notNullable().defaultTo('[]');
    t.jsonb('spec');
    t.text('sample_input');
    /** Each generated graph and what was wrong with it: [{problems: string[]}] (empty problems: it validated). */
    t.jsonb('attempts').notNullable().defaultTo('[]');
    /** The messages exchanged with the model, in order. */
    t.jsonb('conversation').notNullable().defaultTo('[]');
    t.jsonb('usage').notNullable().defaultTo('{"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cost_usd":0}');
    t.uuid('agent_id').references('agents.id').onDelete('set null');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'created_at']);
    t.index(['agent_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('wizard_sessions');
}
