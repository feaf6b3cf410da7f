import type { Knex } from 'knex';

// Retrying a run's failed items and testing a version on past items (issue 36). Both make a run whose items are
// other runs' items (run_item_sources) rather than the parse of an input of its own. A retry links to the run it
// retries (`retry_of`); a test run on past items runs in test mode (`dry_run`): tools that act in other systems
// plan their effect (planned_effects) instead of acting, and approvals are recorded as "would ask".
// effect_attempts is the other half of the effects ledger: a call that began and has no recorded result either was
// refused by the other system (certainly not done) or may have taken effect (no answer, a timeout, a lost worker).
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('runs', (t) => {
    t.uuid('retry_of').references('runs.id').onDelete('set null');
    t.boolean('dry_run').notNullable().defaultTo(false);
    t.index(['retry_of']);
  });

  await knex.schema.createTable('run_item_sources', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('seq').notNullable();
    t.uuid('source_run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('source_seq').notNullable();
    t.primary(['run_id', 'seq']);
    t.index(['source_run_id', 'source_seq']);
  });

  // A retry claims the items it retries before it opens its run: two people retrying the same run at once never
  // both retry an item (the primary key lets one claim win).
  await knex.schema.createTable('run_retry_claims', (t) => {
    t.uuid('source_run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('source_seq').notNullable();
    t.timestamp('claimed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['source_run_id', 'source_seq']);
  });

  await knex.schema.createTable('effect_attempts', (t) => {
    t.text('key').primary();
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable();
    t.text('tool').notNullable();
    /** The other system answered with a refusal: the call did not act. */
    t.boolean('refused').notNullable().defaultTo(false);
    /** An attempt ended without an answer (a timeout, a dropped connection, a server error): it may have acted. */
    t.boolean('uncertain').notNullable().defaultTo(false);
    t.text('error');
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['run_id', 'item_seq']);
  });

  await knex.schema.createTable('planned_effects', (t) => {
    t.text('key').primary();
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable();
    /** `tool`: a call that would have acted; `approval`: a person would have been asked; `review`: flagged. */
    t.text('kind').notNullable();
    t.text('tool');
    t.jsonb('arguments');
    t.text('message');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['run_id', 'item_seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('planned_effects');
  await knex.schema.dropTableIfExists('effect_attempts');
  await knex.schema.dropTableIfExists('run_retry_claims');
  await knex.schema.dropTableIfExists('run_item_sources');
  await knex.schema.alterTable('runs', (t) => {
    t.dropIndex(['retry_of']);
    t.dropColumn('dry_run');
    t.dropColumn('retry_of');
  });
}
