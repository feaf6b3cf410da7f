// Citations in a model's answer are checked against the passages the item actually retrieved (its source
// context): a model can invent a plausible-looking reference, and a citation a reader cannot open and verify is
// worse than none. Kept citations are recorded with the item's source context; the others are removed from the
// answer and logged on the run.
import type { Knex } from 'knex';
import { appendRunLog } from '../../db/run-progress';
import type { RetrievedPassage } from '../../model/retrieval';

/** How the model is asked to cite a passage: its id in a marker no ordinary text contains. */
export const citeMarker = (passageId: string) => `[P${passageId}]`;
const markerPattern = /\[P(\d{1,18})\]/g;

export const citationInstructions = `Cite every passage you use right after the statement it supports, with its cite_as marker exactly as given (for example ${citeMarker('12')}; a passage in the item's data with passage_id 12 is cited the same way); cite only passages you were given.`;

/** Passage ids cited anywhere in the answer (text, or any string of a structured answer), in order of appearance. */
export function citedPassageIds(output: unknown): string[] {
  const found = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') for (const m of v.matchAll(markerPattern)) found.add(m[1]);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') Object.values(v).forEach(visit);
  };
  visit(output);
  return [...found];
}

/** The answer without the markers of the given ids (and the space before each). */
export function withoutCitations<T>(output: T, ids: ReadonlySet<string>): T {
  if (ids.size === 0) return output;
  const strip = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replace(/\s?\[P(\d{1,18})\]/g, (m, id: string) => (ids.has(id) ? '' : m));
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, strip(x)]));
    return v;
  };
  return strip(output) as T;
}

/**
 * Checks the answer's citations for one item's model step and records them. Idempotent, as activities retry:
 * a citation is recorded once (the first attempt's row stands) and only a newly recorded drop is logged.
 */
export async function checkCitations<T>(
  knex: Knex,
  { runId, seq, nodeId, output }: { runId: string; seq: number; nodeId: string; output: T },
): Promise<T> {
  const cited = citedPassageIds(output);
  if (cited.length === 0) return output;
  const retrieved = new Map<string, RetrievedPassage>();
  const contexts: { passages: RetrievedPassage[] }[] = await knex('run_source_context')
    .where({ run_id: runId, item_seq: seq })
    .select('passages');
  for (const c of contexts) for (const p of c.passages) retrieved.set(p.passage_id, p);

  const rows = cited.map((id) => {
    const p = retrieved.get(id);
    return {
      run_id: runId,
      item_seq: seq,
      node_id: nodeId,
      passage_id: id,
      kept: !!p,
      source: p?.source ?? null,
      version: p?.version ?? null,
      page: p?.page ?? null,
      paragraph: p?.paragraph ?? null,
    };
  });
  const recorded: { passage_id: string; kept: boolean }[] = await knex('run_citations')
    .insert(rows)
    .onConflict(['run_id', 'item_seq', 'node_id', 'passage_id'])
    .ignore()
    .returning(['passage_id', 'kept']);
  const dropped = new Set(rows.filter((r) => !r.kept).map((r) => r.passage_id));
  const newlyDropped = recorded.filter((r) => !r.kept).map((r) => citeMarker(r.passage_id));
  if (newlyDropped.length > 0)
    await appendRunLog(knex, [
      {
        run_id: runId,
        level: 'warn',
        node_id: nodeId,
        item_seq: seq,
        message: `dropped ${newlyDropped.length === 1 ? 'a citation' : `${newlyDropped.length} citations`} of passages this item never retrieved: ${newlyDropped.join(', ')}`,
      },
    ]);
  return withoutCitations(output, dropped);
}
