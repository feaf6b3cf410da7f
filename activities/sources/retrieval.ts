// Retrieval from an agent's sources: full-text search (Postgres tsvector; any query word may match, passages
// with all of them first, then by cover density) and, when an embedding model is available, vector search
// (pgvector, cosine), fused by reciprocal rank. A passage is found with its document's opening as context, at the
// lowest weight (db/migrations/031_passage_context.ts), and Arabic words without their article. Each source is
// searched in the version that was in force when the run started, so a run under way keeps its version while a
// replacement is indexed and activated.
import type { Knex } from 'knex';
import { loadEmbedder } from './embedder';
import type { Box } from './layout';
import { inSpan } from '../../services/telemetry/tracing';

export interface RetrievedPassage {
  passage_id: string;
  source: string;
  source_id: string;
  version: number;
  document: string;
  page: number | null;
  paragraph: number;
  part: number;
  text: string;
  boxes: Box[] | null;
  page_size: { width: number; height: number; unit: string } | null;
  ocr_confidence: number | null;
  score: number;
  citation_url: string;
}

export interface RetrieveRequest {
  workspaceId: string;
  sourceNames: string[];
  query: string;
  topK: number;
  /** The version in force at this moment is searched (a run's start); absent: the current versions. */
  asOf?: Date;
  publicUrl: string;
}

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

async function searchPassages(knex: Knex, req: RetrieveRequest): Promise<RetrievedPassage[]> {
  const versions = (await versionsToSearch(knex, req.workspaceId, req.sourceNames, req.asOf)).map((v) => v.versionId);
  if (versions.length === 0 || req.query.trim() === '') return [];

  const ranked: string[][] = [];
  const fullText: { id: string; all_terms: boolean }[] = (
    await knex.raw(
      `with q as (
         select to_tsquery('simple', array_to_string(array(
           select quote_literal(l) from unnest(tsvector_to_array(to_tsvector('english', search_text(?)))) l), ' | ')) as q)
       select p.id::text as id, p.tsv @@ plainto_tsquery('english', search_text(?)) as all_terms from passages p, q
        where p.version_id = any(?) and p.tsv @@ q.q
        order by all_terms desc, ts_rank_cd(p.tsv, q.q, 1) desc, p.id
        limit ?`,
      [req.query, req.query, versions, candidates],
    )
  ).rows;
  // Two lexical lists: passages holding every query word (strong evidence: an exact term, a number, a name)
  // and passages holding any of them. A passage in both outweighs one the vector search alone ranks first.
  ranked.push(fullText.filter((r) => r.all_terms).map((r) => r.id));
  ranked.push(fullText.map((r) => r.id));

  const embedder = await loadEmbedder();
  if (embedder) {
    const [vector] = await embedder.embed([req.query], 'query');
    const col = embedder.column;
    const nearest: { id: string }[] = (
      await knex.raw(
        `select p.id::text as id from passages p
          where p.version_id = any(?) and p.${col} is not null and p.${col} <=> ?::vector < ?
          order by p.${col} <=> ?::vector
          limit ?`,
        [versions, JSON.stringify(vector), 1 - embedder.minSimilarity, JSON.stringify(vector), candidates],
      )
    ).rows;
    ranked.push(nearest.map((r) => r.id));
  }

  const scores = new Map<string, number>();
  for (const list of ranked) list.forEach((id, rank) => scores.set(id, (scores.get(id) ?? 0) + 1 / (rrfK + rank + 1)));
  const top = [...scores.entries()].sort((a, b) => b[1] - a[1] || Number(a[0]) - Number(b[0])).slice(0, req.topK);
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
