import type { Knex } from 'knex';

// What a passage is searched with: its document's opening (activities/sources/document-context.ts), at the lowest
// full-text weight, so a question naming the document finds the passage that answers it rather than the title
// alone. The passage text shown and its boxes are unchanged. Full-text search also drops the Arabic article
// (ال, with و/ب/ف/ك before it, and لل "to the"): "التذكرة" and "تذكرة" are one word to a reader, and the 'english'
// configuration has no Arabic stemmer.

/** The text full-text search reads, in the index and in a query alike. */
export const createSearchText = `create function search_text(t text) returns text language sql immutable parallel safe
  as $$ select regexp_replace(t, '(^|\\s)(?:[وبفك]?ال|لل)(?=\\S\\S)', '\\1', 'g') $$`;

/** A passage's full-text vector: its context at the lowest weight, its own text at the highest. */
export const passageTsv = `setweight(to_tsvector('english', search_text(coalesce(context, ''))), 'D') ||
        setweight(to_tsvector('english', search_text(text)), 'A')`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('passages', (t) => {
    t.text('context');
  });
  await knex.raw(createSearchText);
  await knex.raw('drop index passages_tsv');
  await knex.raw('alter table passages drop column tsv');
  await knex.raw(`alter table passages add column tsv tsvector generated always as (${passageTsv}) stored`);
  await knex.raw('create index passages_tsv on passages using gin (tsv)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index passages_tsv');
  await knex.raw('alter table passages drop column tsv');
  await knex.raw(
    `alter table passages add column tsv tsvector generated always as (to_tsvector('english', text)) stored`,
  );
  await knex.raw('create index passages_tsv on passages using gin (tsv)');
  await knex.raw('drop function search_text(text)');
  await knex.schema.alterTable('passages', (t) => {
    t.dropColumn('context');
  });
}
