import type { Knex } from 'knex';

/** Dimensions of the local embedding model's vectors (activities/sources/embedder.ts). */
export const embeddingDimensions = 384;

// Sources (reference material agents search): a named source has numbered versions (replacing a source adds a
// version and archives the previous one), a version holds the uploaded documents, and indexing turns them into
// passages that keep where they were found (page, paragraph, boxes on the page) for citations.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sources', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.text('name').notNullable();
    t.text('kind').notNullable(); // files | url
    // The version agents use: the newest one whose indexing finished. Null until the first one has.
    t.uuid('current_version_id');
    t.integer('latest_version').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['workspace_id', 'name']);
  });

  await knex.schema.createTable('source_versions', (t) => {
    t.uuid('id').primary();
    t.uuid('source_id').notNullable().references('sources.id').onDelete('cascade');
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.integer('version').notNullable();
    // indexing → ready (current) → archived (replaced); or indexing → failed (the previous version stays current)
    t.text('status').notNullable().defaultTo('indexing');
    t.text('error');
    t.integer('pages_total').notNullable().defaultTo(0);
    t.integer('pages_done').notNullable().defaultTo(0);
    t.integer('passages').notNullable().defaultTo(0);
    t.text('workflow_id');
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('indexed_at', { useTz: true });
    // Agents use a version from activated_at until archived_at; a run uses the one in force when it was created.
    t.timestamp('activated_at', { useTz: true });
    t.timestamp('archived_at', { useTz: true });
    t.unique(['source_id', 'version']);
  });
  await knex.schema.alterTable('sources', (t) => {
    t.foreign('current_version_id').references('source_versions.id').onDelete('set null');
  });

  await knex.schema.createTable('source_documents', (t) => {
    t.uuid('id').primary();
    t.uuid('version_id').notNullable().references('source_versions.id').onDelete('cascade');
    t.integer('position').notNullable();
    t.text('file_name').notNullable();
    t.text('url'); // web sources: fetched by the indexing workflow
    t.text('format'); // pdf, docx, …, png, html: what the content turned out to be
    t.text('content_type');
    t.bigInteger('size');
    t.text('sha256');
    t.binary('content');
    t.text('status').notNullable().defaultTo('pending'); // pending | extracting | done | failed
    t.text('error');
    t.integer('pages_total').notNullable().defaultTo(0);
    t.integer('pages_done').notNullable().defaultTo(0);
    t.unique(['version_id', 'position']);
  });

  // One row per page of a paged document (PDF page, image, slide, sheet): its size in the units its boxes use,
  // and for PDFs and images a picture of it, so a citation opens without re-reading the document.
  await knex.schema.createTable('source_pages', (t) => {
    t.uuid('document_id').notNullable().references('source_documents.id').onDelete('cascade');
    t.integer('page').notNullable();
    t.float('width');
    t.float('height');
    t.text('unit'); // pt (PDF points, 1/72 inch) | px (image pixels)
    t.boolean('ocr').notNullable().defaultTo(false);
    t.float('ocr_confidence');
    t.binary('image'); // PNG
    t.primary(['document_id', 'page']);
  });

  await knex.schema.createTable('passages', (t) => {
    t.bigIncrements('id');
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('cascade');
    t.uuid('source_id').notNullable().references('sources.id').onDelete('cascade');
    t.uuid('version_id').notNullable().references('source_versions.id').onDelete('cascade');
    t.uuid('document_id').notNullable().references('source_documents.id').onDelete('cascade');
    t.integer('page'); // 1-based; null for formats without pages (plain text, Word)
    t.integer('paragraph').notNullable(); // 1-based, within the page (or the document when it has no pages)
    t.integer('part').notNullable().defaultTo(1); // a long paragraph is split into parts
    t.text('text').notNullable();
    t.jsonb('boxes'); // [{x, y, width, height}] in page units, origin top-left: one per line
    t.jsonb('words'); // OCR only: [{text, confidence, box}] as the recogniser read them
    t.float('ocr_confidence');
    t.specificType('embedding', `vector(${embeddingDimensions})`);
    t.index(['version_id', 'page', 'paragraph']);
    t.index(['document_id', 'page']);
  });
  await knex.raw(
    `alter table passages add column tsv tsvector generated always as (to_tsvector('english', text)) stored`,
  );
  await knex.raw('create index passages_tsv on passages using gin (tsv)');
  await knex.raw('create index passages_embedding on passages using hnsw (embedding vector_cosine_ops)');

  // The passages each item's retrieval found: the "source context used" of run details.
  await knex.schema.createTable('run_source_context', (t) => {
    t.uuid('run_id').notNullable().references('runs.id').onDelete('cascade');
    t.integer('item_seq').notNullable();
    t.text('node_id').notNullable();
    t.text('query').notNullable();
    t.jsonb('passages').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['run_id', 'item_seq', 'node_id', 'query']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('run_source_context');
  await knex.schema.dropTableIfExists('passages');
  await knex.schema.dropTableIfExists('source_pages');
  await knex.schema.dropTableIfExists('source_documents');
  await knex.schema.alterTable('sources', (t) => t.dropForeign(['current_version_id']));
  await knex.schema.dropTableIfExists('source_versions');
  await knex.schema.dropTableIfExists('sources');
}
