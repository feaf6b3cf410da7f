import type { Knex } from 'knex';

// Chat Mode: a person's (or an API key's) conversations with the assistant in a workspace, optionally about one
// agent, and their messages as the model saw them (content blocks, with the tool calls it made and their results),
// so a conversation can be continued and its token usage and cost are kept like a run's.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('chat_conversations', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    /** Whose conversation it is: `user:<id>` for a person, `key:<id>` for an API key. Others do not see it. */
    t.text('owner').notNullable();
    t.uuid('agent_id').references('agents.id').onDelete('SET NULL');
    t.text('title').notNullable();
    t.bigInteger('input_tokens').notNullable().defaultTo(0);
    t.bigInteger('output_tokens').notNullable().defaultTo(0);
    t.bigInteger('cache_read_tokens').notNullable().defaultTo(0);
    t.double('cost_usd').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id', 'owner', 'updated_at']);
  });
  await knex.schema.createTable('chat_messages', (t) => {
    t.uuid('id').primary();
    t.uuid('conversation_id').notNullable().references('chat_conversations.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('role').notNullable(); // user | assistant
    /** The text shown to the person. */
    t.text('text').notNullable();
    /** Anthropic content blocks of every turn this message took (tool_use/tool_result included), replayed to the model. */
    t.jsonb('turns').notNullable();
    /** The tools the assistant called for this answer: name, input, result summary, error. */
    t.jsonb('tool_calls').notNullable().defaultTo('[]');
    /** Runs the answer relies on (started, read or explained), linked from it. */
    t.jsonb('run_ids').notNullable().defaultTo('[]');
    t.jsonb('usage');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['conversation_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('chat_messages');
  await knex.schema.dropTable('chat_conversations');
}
