import type { Knex } from 'knex';

// The citations of each item's model answer, checked against what the item retrieved: kept ones are part of the
// item's source context; dropped ones (the passage was never retrieved for that item) are kept for the record.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('run_citations', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable();
    t.text('passage_id').notNullable(); // as the model wrote it: a dropped one may name no passage at all
    t.boolean('kept').notNullable();
    // Where the passage was found, copied from the retrieval, so it reads the same after the source is replaced.
    t.text('source');
    t.integer('version');
    t.integer('page');
    t.integer('paragraph');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['run_id', 'item_seq', 'node_id', 'passage_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('run_citations');
}
