import type { Knex } from 'knex';

// Micro-batching of webhook and form deliveries: each delivery is stored before it is acknowledged, in the open
// batch of its trigger; the batch becomes one run of many items when its window closes or it is full.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('delivery_batches', (t) => {
    t.uuid('id').primary();
    t.uuid('trigger_id').notNullable().references('triggers.id').onDelete('CASCADE');
    t.uuid('workspace_id').notNullable();
    t.text('status').notNullable().defaultTo('collecting'); // collecting → closed
    t.integer('size').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('closes_at', { useTz: true }).notNullable();
    t.uuid('run_id');
    t.index(['trigger_id', 'status']);
  });
  await knex.schema.createTable('trigger_deliveries', (t) => {
    t.uuid('id').primary();
    t.uuid('trigger_id').notNullable().references('triggers.id').onDelete('CASCADE');
    t.uuid('batch_id').notNullable().references('delivery_batches.id').onDelete('CASCADE');
    t.integer('seq').notNullable(); // its place in the batch, and so its item's seq in the batch's run
    t.text('delivery_key'); // a webhook's webhook-id: the same one again is refused
    t.jsonb('data').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['trigger_id', 'delivery_key']);
    t.unique(['batch_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('trigger_deliveries');
  await knex.schema.dropTable('delivery_batches');
}
