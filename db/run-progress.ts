// Mirrors item progress onto the run row, which the API and console read. One statement, so the counts and
// the status are always consistent with the items.
import type { Knex } from 'knex';

export interface RunCounts {
  total: number;
  done: number;
  failed: number;
  needs_review: number;
}

// The run's item counts, as columns of a subquery `c` (with `pending_approvals`).
const itemCounts = `(
  select
    count(*) filter (where i.status = 'done') as done,
    count(*) filter (where i.status = 'failed') as failed,
    count(*) filter (where i.status = 'needs_review') as needs_review,
    count(*) filter (where i.status = 'skipped') as skipped,
    (select count(*) from approvals a where a.run_id = :runId and a.status = 'pending') as pending_approvals
  from run_items i where i.run_id = :runId
) c`;

/** Returns the counts it set. */
export async function refreshRunCounts(knex: Knex | Knex.Transaction, runId: string): Promise<RunCounts> {
  const { rows } = await knex.raw(
    `update runs r set
       done = c.done, failed = c.failed, needs_review = c.needs_review, skipped = c.skipped,
       status = case
         when r.status in ('running', 'needs_review')
           then case when c.needs_review > 0 or c.pending_approvals > 0 then 'needs_review' else 'running' end
         else r.status end
     from ${itemCounts}
     where r.id = :runId
     returning r.total, r.done, r.failed, r.needs_review`,
    { runId },
  );
  return rows[0];
}

export interface SettledRun {
  status: 'completed' | 'failed' | 'needs_review' | 'cancelled';
  counts: RunCounts;
  /** Items left skipped (not run: the run was cancelled or stopped, or a reviewer rejected them). */
  skipped: number;
  /** From its start (its opening, if it never started) to its end, as the API's duration_ms. */
  seconds: number;
}

/**
 * A run's end in one statement: its counts, and the status they give. Cancelled, or `interrupted` (stopped, or
 * an error) is failed; so is a run whose every item failed (its error then `allFailed`); one with flagged items
 * left needs review.
 */
export async function settleRun(
  knex: Knex | Knex.Transaction,
  runId: string,
  how: { cancelled: boolean; interrupted: boolean; error: string | null; allFailed: string },
): Promise<SettledRun> {
  const { rows } = await knex.raw(
    `update runs r set
       done = c.done, failed = c.failed, needs_review = c.needs_review, skipped = c.skipped,
       status = s.status,
       error = coalesce(:error, case when s.status = 'failed' then :allFailed end),
       ended_at = now()
     from ${itemCounts}
     cross join lateral (select case
         when :cancelled then 'cancelled'
         when :interrupted or (c.failed > 0 and c.failed = (select total from runs where id = :runId)) then 'failed'
         when c.needs_review > 0 then 'needs_review'
         else 'completed' end as status) s
     where r.id = :runId
     returning r.status, r.total, r.done, r.failed, r.needs_review, r.skipped,
       extract(epoch from r.ended_at - coalesce(r.started_at, r.created_at))::float8 as seconds`,
    { runId, ...how },
  );
  const { status, skipped, seconds, ...counts } = rows[0];
  return { status, counts, skipped, seconds };
}

export async function appendRunLog(
  knex: Knex | Knex.Transaction,
  entries: { run_id: string; level: 'info' | 'warn' | 'error'; message: string; node_id?: string; item_seq?: number }[],
): Promise<void> {
  if (entries.length > 0) await knex('run_logs').insert(entries);
}

/** Adds a page's node counters to node_activity in one statement. */
export async function recordNodeActivity(
  trx: Knex | Knex.Transaction,
  runId: string,
  counters: Map<string, { kind: string; in: number; done: number; failed: number }>,
): Promise<void> {
  if (counters.size === 0) return;
  await trx('node_activity')
    .insert(
      [...counters].map(([node_id, c]) => ({
        run_id: runId,
        node_id,
        kind: c.kind,
        items_in: c.in,
        items_done: c.done,
        items_failed: c.failed,
        ended_at: trx.fn.now(),
      })),
    )
    .onConflict(['run_id', 'node_id'])
    .merge({
      items_in: trx.raw('node_activity.items_in + excluded.items_in'),
      items_done: trx.raw('node_activity.items_done + excluded.items_done'),
      items_failed: trx.raw('node_activity.items_failed + excluded.items_failed'),
      ended_at: trx.fn.now(),
    });
}
