// Runs made of other runs' items: a retry of a run's failed items, and a test run of a version on past items. Each
// item of such a run names the item it comes from (run_item_sources); these queries read both directions.
import type { Knex } from 'knex';

export interface ItemRef {
  runId: string;
  seq: number;
}

export async function storeItemSources(knex: Knex, runId: string, items: ItemRef[]): Promise<void> {
  const rows = items.map((item, seq) => ({ run_id: runId, seq, source_run_id: item.runId, source_seq: item.seq }));
  // Chunked: a test run may take thousands of items, and a statement has at most 65,535 parameters.
  for (let i = 0; i < rows.length; i += 5_000)
    await knex('run_item_sources')
      .insert(rows.slice(i, i + 5_000))
      .onConflict(['run_id', 'seq'])
      .ignore();
}

/** Claims a run's items for a retry: the ones this call won (another retry may hold the others). */
export async function claimForRetry(knex: Knex, runId: string, seqs: number[]): Promise<number[]> {
  const won: { source_seq: number }[] = await knex('run_retry_claims')
    .insert(seqs.map((seq) => ({ source_run_id: runId, source_seq: seq })))
    .onConflict(['source_run_id', 'source_seq'])
    .ignore()
    .returning('source_seq');
  return won.map((r) => r.source_seq);
}

/** Gives back claims of a retry that did not open its run. */
export async function releaseRetryClaims(knex: Knex, runId: string, seqs: number[]): Promise<void> {
  if (seqs.length > 0) await knex('run_retry_claims').where({ source_run_id: runId }).whereIn('source_seq', seqs).del();
}

/** A failed item of a run, as a retry sees it. */
export interface FailedItem {
  seq: number;
  node_id: string | null;
  error: string | null;
  /** The retry run that already took this item, if one did: its own failed items are retried from it. */
  retried_by: string | null;
  /** Calls of the item that began and have no recorded result and no refusal: they may have acted. */
  in_doubt: { node_id: string; tool: string; error: string | null }[];
}

export async function failedItems(knex: Knex, runId: string): Promise<FailedItem[]> {
  const rows = await knex('run_items as i')
    .where({ 'i.run_id': runId, 'i.status': 'failed' })
    .orderBy('i.seq')
    .select(
      'i.seq',
      'i.node_id',
      'i.error',
      knex.raw(
        `(select s.run_id from run_item_sources s join runs r on r.id = s.run_id
          where s.source_run_id = i.run_id and s.source_seq = i.seq and r.retry_of = i.run_id
          order by r.created_at desc limit 1) as retried_by`,
      ),
      knex.raw(
        `coalesce((select json_agg(json_build_object('node_id', a.node_id, 'tool', a.tool, 'error', a.error)
            order by a.started_at)
          from effect_attempts a
          where a.run_id = i.run_id and a.item_seq = i.seq and (a.uncertain or not a.refused)
            and not exists (select 1 from effects e where e.key = a.key)), '[]'::json) as in_doubt`,
      ),
    );
  return rows as FailedItem[];
}

/** The runs that retry this run's items, newest first. */
export async function retriesOf(knex: Knex, runId: string): Promise<string[]> {
  const rows = await knex('runs').where({ retry_of: runId }).orderBy('created_at', 'desc').select('id');
  return rows.map((r) => r.id);
}

/** The items this run runs over, by the run they come from: what a retry retries, what a test run replays. */
export async function itemSourcesOf(knex: Knex, runId: string): Promise<{ run_id: string; items: number[] }[]> {
  const rows = await knex('run_item_sources')
    .where({ run_id: runId })
    .groupBy('source_run_id')
    .select('source_run_id as run_id', knex.raw('array_agg(source_seq order by seq) as items'))
    .orderByRaw('min(seq)');
  return rows;
}

/** The agent's newest `limit` settled items (done or failed), of runs that are not themselves tests on past items. */
export async function lastItemsOfAgent(knex: Knex, agentId: string, limit: number): Promise<ItemRef[]> {
  const rows = await knex('run_items as i')
    .join('runs as r', 'r.id', 'i.run_id')
    .where({ 'r.agent_id': agentId, 'r.dry_run': false })
    .whereIn('i.status', ['done', 'failed'])
    .orderBy([
      { column: 'r.created_at', order: 'desc' },
      { column: 'i.seq', order: 'desc' },
    ])
    .limit(limit)
    .select('i.run_id', 'i.seq');
  // Oldest first, as the runs took them.
  return rows.reverse().map((r) => ({ runId: r.run_id, seq: r.seq }));
}

/** An item of a test run beside the item it replays. */
export interface ComparedItem {
  seq: number;
  source: { run_id: string; item_seq: number };
  original: { status: string; output: unknown; route: string | null; error: string | null } | null;
  test: { status: string; output: unknown; route: string | null; error: string | null };
  planned_effects: { node_id: string; kind: string; tool: string | null; arguments: unknown; message: string | null }[];
}

export async function comparedItems(knex: Knex, runId: string): Promise<ComparedItem[]> {
  const rows = await knex('run_item_sources as s')
    .join('run_items as t', (j) => j.on('t.run_id', 's.run_id').andOn('t.seq', 's.seq'))
    .leftJoin('run_items as o', (j) => j.on('o.run_id', 's.source_run_id').andOn('o.seq', 's.source_seq'))
    .where('s.run_id', runId)
    .orderBy('s.seq')
    .select(
      's.seq',
      's.source_run_id',
      's.source_seq',
      't.status as t_status',
      't.output as t_output',
      knex.raw('coalesce(t.output_node, t.node_id) as t_route'),
      't.error as t_error',
      'o.status as o_status',
      'o.output as o_output',
      knex.raw('coalesce(o.output_node, o.node_id) as o_route'),
      'o.error as o_error',
      knex.raw(
        `coalesce((select json_agg(json_build_object('node_id', p.node_id, 'kind', p.kind, 'tool', p.tool,
            'arguments', p.arguments, 'message', p.message) order by p.created_at)
          from planned_effects p where p.run_id = s.run_id and p.item_seq = s.seq), '[]'::json) as planned`,
      ),
    );
  return rows.map((r) => ({
    seq: r.seq,
    source: { run_id: r.source_run_id, item_seq: r.source_seq },
    original: r.o_status ? { status: r.o_status, output: r.o_output, route: r.o_route, error: r.o_error } : null,
    test: { status: r.t_status, output: r.t_output, route: r.t_route, error: r.t_error },
    planned_effects: r.planned,
  }));
}
