import type { Knex } from 'knex';

// Everything hangs off a workspace; item payloads, outputs, files and logs live here rather than in Temporal
// histories (DESIGN.md "claim check").
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create extension if not exists vector');

  await knex.schema.createTable('workspaces', (t) => {
    t.uuid('id').primary();
    t.text('name').notNullable();
    t.text('plan').notNullable().defaultTo('free');
    t.boolean('api_enabled').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('name').notNullable();
    t.text('prefix').notNullable().unique(); // looked up first; the secret part is only ever stored hashed
    t.text('hash').notNullable();
    t.specificType('scopes', 'text[]').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
  });

  await knex.schema.createTable('agents', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.text('state').notNullable().defaultTo('draft');
    t.integer('current_version').notNullable();
    t.integer('tested_version'); // the version whose last test run succeeded: gates Draft → Ready
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['workspace_id']);
  });

  await knex.schema.createTable('agent_versions', (t) => {
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.integer('version').notNullable();
    t.jsonb('spec').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['agent_id', 'version']);
  });

  await knex.schema.createTable('runs', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.integer('agent_version').notNullable();
    t.text('status').notNullable().defaultTo('running');
    t.text('trigger').notNullable();
    t.text('input').notNullable();
    t.text('idempotency_key');
    t.text('request_hash');
    t.integer('total').notNullable().defaultTo(0);
    t.integer('done').notNullable().defaultTo(0);
    t.integer('failed').notNullable().defaultTo(0);
    t.integer('needs_review').notNullable().defaultTo(0);
    t.integer('skipped').notNullable().defaultTo(0);
    t.text('error');
    t.jsonb('usage').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
    t.unique(['workspace_id', 'idempotency_key']);
    t.index(['workspace_id', 'created_at']);
    t.index(['agent_id', 'created_at']);
  });

  await knex.schema.createTable('run_items', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('seq').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.jsonb('data').notNullable();
    t.jsonb('output');
    t.text('output_node'); // the output node that collected this item's result, for files built at the end
    t.text('error');
    t.text('node_id'); // where the item stands in the graph (the node it waits at, or the last one it passed)
    t.jsonb('reasoning');
    t.jsonb('usage');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['run_id', 'seq']);
  });

  await knex.schema.createTable('node_activity', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.text('node_id').notNullable();
    t.text('kind').notNullable();
    t.integer('items_in').notNullable().defaultTo(0);
    t.integer('items_done').notNullable().defaultTo(0);
    t.integer('items_failed').notNullable().defaultTo(0);
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('ended_at', { useTz: true });
    t.primary(['run_id', 'node_id']);
  });

  await knex.schema.createTable('run_logs', (t) => {
    t.bigIncrements('id');
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('level').notNullable();
    t.text('node_id');
    t.integer('item_seq');
    t.text('message').notNullable();
    t.index(['run_id', 'id']);
  });

  await knex.schema.createTable('approvals', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable();
    t.text('workflow_id').notNullable(); // the page workflow that waits on this decision
    t.text('tool').notNullable();
    t.text('message');
    t.jsonb('arguments').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.jsonb('decided_arguments');
    t.text('decided_by');
    t.text('reason');
    t.timestamp('requested_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('decided_at', { useTz: true });
    t.timestamp('timeout_at', { useTz: true });
    t.unique(['run_id', 'item_seq', 'node_id']);
    t.index(['workspace_id', 'status', 'requested_at']);
  });

  await knex.schema.createTable('run_outputs', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.text('node_id').notNullable();
    t.jsonb('data').notNullable();
    t.primary(['run_id', 'node_id']);
  });

  await knex.schema.createTable('files', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('run_id').references('runs.id').onDelete('cascade');
    t.text('name').notNullable();
    t.text('content_type').notNullable();
    t.integer('size').notNullable();
    t.binary('content').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('agent_state', (t) => {
    t.uuid('agent_id').notNullable().references('agents.id').onDelete('cascade');
    t.text('key').notNullable();
    t.jsonb('value').notNullable();
    t.integer('version').notNullable().defaultTo(1); // optimistic concurrency for writers
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['agent_id', 'key']);
  });

  // Ledger of side effects already performed, keyed by (run, item, node): a retried activity or a restarted
  // worker finds its key here and returns the recorded result instead of acting twice.
  await knex.schema.createTable('effects', (t) => {
    t.text('key').primary();
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.jsonb('result');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // Runs counted per workspace and month for plan allowances; incremented atomically at run start.
  await knex.schema.createTable('workspace_usage', (t) => {
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('month').notNullable(); // YYYY-MM, UTC
    t.integer('runs').notNullable().defaultTo(0);
    t.primary(['workspace_id', 'month']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'workspace_usage',
    'effects',
    'agent_state',
    'files',
    'run_outputs',
    'approvals',
    'run_logs',
    'node_activity',
    'run_items',
    'runs',
    'agent_versions',
    'agents',
    'api_keys',
    'workspaces',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
