// Retrieval from an agent's sources: full-text search (Postgres tsvector; any query word may match, passages
// holding more of them first, then by cover density) and, when an embedding model is available, vector search
// (pgvector, cosine), fused by reciprocal rank. A passage is found with its document's opening as context, at the
// lowest weight (db/migrations/032_passage_context.ts), and Arabic words without their article. Each source is
// searched in the version that was in force when the run started, so a run under way keeps its version while a
// replacement is indexed and activated.
import type { Knex } from 'knex';
import { loadEmbedder } from './embedder';
import type { RetrievedPassage, RetrieveRequest } from '../../model/retrieval';
import { inSpan } from '../../services/telemetry/tracing';

/** Reciprocal rank fusion's constant (Cormack et al. 2009). */
const rrfK = 60;
const candidates = 50;

/** The version of each named source to search: the one in force at `asOf`, else the current one. */
export async function versionsToSearch(
  knex: Knex,
  workspaceId: string,
  names: string[],
  asOf?: Date,
): Promise<{ source: string; versionId: string }[]> {
  if (names.length === 0) return [];
  const rows: { name: string; pinned: string | null; current: string | null }[] = (
    await knex.raw(
      `select s.name, s.current_version_id as current,
              (select v.id from source_versions v
                where v.source_id = s.id and v.activated_at <= ?::timestamptz
                  and (v.archived_at is null or v.archived_at > ?::timestamptz)
                order by v.version desc limit 1) as pinned
         from sources s
        where s.workspace_id = ? and s.name = any(?)`,
      [asOf ?? new Date(), asOf ?? new Date(), workspaceId, names],
    )
  ).rows;
  return rows
    .map((r) => ({ source: r.name, versionId: (asOf ? r.pinned : null) ?? r.current }))
    .filter((r): r is { source: string; versionId: string } => r.versionId !== null);
}

/** The passages of the named sources that best answer `req.query`, in a retrieval span (its counts, not the query). */
export function retrieve(knex: Knex, req: RetrieveRequest): Promise<RetrievedPassage[]> {
  const attributes = {
    'gen_ai.operation.name': 'retrieval',
    'cadre.retrieval.sources': req.sourceNames.length,
    'cadre.retrieval.top_k': req.topK,
  };
  return inSpan('retrieval', attributes, async (span) => {
    const passages = await searchPassages(knex, req);
    span.setAttributes({ 'cadre.retrieval.passages': passages.length });
    return passages;
  });
}

/** A word of the query found only in a passage's context counts this much: it names the document, not the passage. */
export const contextWordWeight = 0.5;

/**
 * Full-text candidates in the given versions for a query (bindings: the query, the version ids, how many), best
 * first: by `terms`, the query's distinct words the passage holds (its own text's, and at `contextWordWeight`
 * those only in its context, db/migrations/032_passage_context.ts); then by those of its own words that its
 * document's opening lacks, which tell it from the document's other passages; then by cover density. A passage
 * that is its document's title (the opening's first line: a heading, a letterhead) holds the document's name,
 * not an answer about it: its words count as its context's do.
 */
export const lexicalSearch = `with q as (select tsvector_to_array(to_tsvector('english', search_text(?))) as words),
       tq as (select words, to_tsquery('simple', array_to_string(array(
                select quote_literal(w) from unnest(words) w), ' | ')) as q from q),
       m as (
         select p.id, p.tsv, ts_filter(p.tsv, '{d}') as context,
                -- a title's words are its document's name, as they are in its context
                case when split_part(p.context, chr(10), 1) = p.text then ''::tsvector
                     else ts_filter(p.tsv, '{a}') end as own
           from passages p, tq
          where p.version_id = any(?) and p.tsv @@ tq.q),
       c as (
         select m.id, m.tsv,
                length(m.tsv) - length(ts_delete(m.tsv, tq.words)) as held,
                length(m.own) - length(ts_delete(m.own, tq.words)) as own,
                length(m.context) - length(ts_delete(m.context, tq.words)) as in_context
           from m, tq)
       select c.id::text as id, (c.own + ${contextWordWeight} * (c.held - c.own))::float8 as terms, c.held,
              cardinality(tq.words) as of
         from c, tq
        order by terms desc, c.held - c.in_context desc, ts_rank_cd(c.tsv, tq.q, 1) desc, c.id
        limit ?`;

/** A full-text match, as `lexicalSearch` gives it. */
export interface LexicalHit {
  id: string;
  /** The query's distinct words the passage holds, those only in its context weighed less. */
  terms: number;
  /** The query's distinct words the passage holds, in its text or its context. */
  held: number;
  /** The query's distinct words. */
  of: number;
}

/**
 * Fuses the full-text matches and the vector search's nearest passages by reciprocal rank, best first. The full
 * text gives two lists: every match, and the strongest evidence, the passages holding the most of the query's
 * words (all of them, or at least two). Words are counted once however often a passage repeats them: an
 * invoice's header says "invoice" three times beside its number, while its totals hold "total" and "due" and,
 * through their context, the number too; the totals answer "the total due on invoice 2291". One shared word is
 * weak evidence, so when no passage holds two, the vector search is not outweighed.
 */
export function fuse(lexical: LexicalHit[], nearest: string[]): [string, number][] {
  const most = Math.max(0, ...lexical.map((h) => h.terms));
  const strongest = lexical.filter((h) => h.terms === most && (most >= 2 || h.held === h.of));
  const ranked = [strongest.map((h) => h.id), lexical.map((h) => h.id), nearest];
  const scores = new Map<string, number>();
  for (const list of ranked) list.forEach((id, rank) => scores.set(id, (scores.get(id) ?? 0) + 1 / (rrfK + rank + 1)));
  return [...scores.entries()].sort((a, b) => b[1] - a[1] || Number(a[0]) - Number(b[0]));
}

async function searchPassages(knex: Knex, req: RetrieveRequest): Promise<RetrievedPassage[]> {
  const versions = (await versionsToSearch(knex, req.workspaceId, req.sourceNames, req.asOf)).map((v) => v.versionId);
  if (versions.length === 0 || req.query.trim() === '') return [];

  const lexical: LexicalHit[] = (await knex.raw(lexicalSearch, [req.query, versions, candidates])).rows;

  let nearest: string[] = [];
  const embedder = await loadEmbedder();
  if (embedder) {
    const [vector] = await embedder.embed([req.query], 'query');
    const col = embedder.column;
    nearest = (
      await knex.raw(
        `select p.id::text as id from passages p
          where p.version_id = any(?) and p.${col} is not null and p.${col} <=> ?::vector < ?
          order by p.${col} <=> ?::vector
          limit ?`,
        [versions, JSON.stringify(vector), 1 - embedder.minSimilarity, JSON.stringify(vector), candidates],
      )
    ).rows.map((r: { id: string }) => r.id);
  }

  const scores = fuse(lexical, nearest);
  const top = scores.slice(0, req.topK);
  if (top.length === 0) return [];

  const rows = await knex('passages as p')
    .join('sources as s', 's.id', 'p.source_id')
    .join('source_versions as v', 'v.id', 'p.version_id')
    .join('source_documents as d', 'd.id', 'p.document_id')
    .leftJoin('source_pages as g', function () {
      this.on('g.document_id', '=', 'p.document_id').andOn('g.page', '=', 'p.page');
    })
    .whereIn(
      'p.id',
      top.map(([id]) => id),
    )
    .select(
      knex.raw('p.id::text as id'),
      's.name as source',
      's.id as source_id',
      'v.version',
      'd.file_name as document',
      'd.url',
      'p.page',
      'p.paragraph',
      'p.part',
      'p.text',
      'p.boxes',
      'p.ocr_confidence',
      'g.width',
      'g.height',
      'g.unit',
    );
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  return top
    .filter(([id]) => byId.has(id))
    .map(([id, score]) => {
      const r = byId.get(id)!;
      return {
        passage_id: id,
        source: r.source,
        source_id: r.source_id,
        version: r.version,
        document: r.url ?? r.document,
        page: r.page,
        paragraph: r.paragraph,
        part: r.part,
        text: r.text,
        boxes: r.boxes,
        page_size: r.width && r.height ? { width: r.width, height: r.height, unit: r.unit } : null,
        ocr_confidence: r.ocr_confidence,
        score: Math.round(score * 1e6) / 1e6,
        citation_url: `${req.publicUrl}/v1/passages/${id}`,
      };
    });
}
