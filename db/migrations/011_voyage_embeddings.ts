import type { Knex } from 'knex';

/** Dimensions asked of Voyage AI (output_dimension): every current Voyage text model can give 1024. */
export const voyageDimensions = 1024;

// Vectors from the remote provider (Voyage AI) have other dimensions than the local model's, so they live in a
// column of their own with its own HNSW index; switching providers leaves the other column's vectors in place.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('passages', (t) => {
    t.specificType('embedding_voyage', `vector(${voyageDimensions})`);
  });
  await knex.raw('create index passages_embedding_voyage on passages using hnsw (embedding_voyage vector_cosine_ops)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists passages_embedding_voyage');
  await knex.schema.alterTable('passages', (t) => t.dropColumn('embedding_voyage'));
}
