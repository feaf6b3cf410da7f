// Moves a page of items through every set-based node in one transaction: reads the page's waiting items, walks
// them in memory (page-walk.ts), applies their state-store operations, and writes what changed. The stops (model,
// external tool, a person, another agent) are returned to the page workflow as actions.
import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import { applyStateOps, type StateOp } from '../db/state-store';
import { appendRunLog, recordNodeActivity, refreshRunCounts } from '../db/run-progress';
import { ActivityDeps, loadRun, loadSpec, type RunRow } from './deps';
import { pageWalker, type ItemRow, type StepAction } from './page-walk';
import { sqlWriteRefusal } from './connectors/sql/writes';
import { inSpan, type SpanRecorder } from '../services/telemetry/tracing';

export interface PageRange {
  runId: string;
  fromSeq: number;
  toSeq: number;
}

/**
 * Advances a page of a run whose row the caller has read (activities/run-phases.ts reads it once per phase).
 * `closingFollows`: the caller closes the run at once when no item stops, and the closing sets the run's counts.
 */
export function pageAdvancer({ knex }: Pick<ActivityDeps, 'knex'>) {
  return async (
    run: RunRow,
    { runId, fromSeq, toSeq }: PageRange,
    { closingFollows = false } = {},
  ): Promise<StepAction[]> => {
    const spec = await loadSpec(knex, run.agent_id, run.agent_version);
    const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
    const refuse = await sqlWriteRefusal(knex, run.workspace_id, spec);

    // One span per page however many items it holds, with their counts; each failed item is an event on it.
    const attributes = { 'cadre.run.id': runId, 'cadre.page.from_seq': fromSeq, 'cadre.page.to_seq': toSeq };
    return inSpan('cadre.page', attributes, (span) =>
      knex.transaction(async (trx) => {
        const items: ItemRow[] = await trx('run_items')
          .where({ run_id: runId })
          .andWhere('seq', '>=', fromSeq)
          .andWhere('seq', '<', toSeq)
          .whereIn('status', ['pending', 'running', 'needs_review'])
          .orderBy('seq')
          .select('seq', 'status', 'data', 'node_id', 'output', 'output_node', 'error')
          .forUpdate();
        const walker = pageWalker(spec, run, workflowId, refuse);
        const { counters, logs, actions, approvals, reviews, planned, flagged, changed } = walker;
        let waiting = items.map((item) => ({ item, op: walker.walk(item) })).filter((w) => w.op !== undefined);
        while (waiting.length > 0) {
          // Group by the node they wait at, apply that node's operations in item order, then walk on.
          const results = await stateResults(trx, run, waiting as { item: ItemRow; op: StateOp }[]);
          waiting = waiting
            .map(({ item }, i) => ({ item, op: walker.resume(item, results[i]) }))
            .filter((w) => w.op !== undefined);
        }

        recordPage(span, items, [...changed], actions.length);
        if (changed.size > 0) {
          const rows = [...changed].map((i) => ({
            seq: i.seq,
            status: i.status,
            data: i.data,
            node_id: i.node_id,
            output: i.output ?? null,
            output_node: i.output_node,
            error: i.error,
          }));
          // One statement for the page: the rows travel as one JSON parameter.
          await trx.raw(
            `update run_items t set status = u.status, data = u.data, node_id = u.node_id, output = u.output,
               output_node = u.output_node, error = u.error, updated_at = now()
             from jsonb_to_recordset(:rows::jsonb) as u(seq int, status text, data jsonb, node_id text,
               output jsonb, output_node text, error text)
             where t.run_id = :runId and t.seq = u.seq`,
            { runId, rows: JSON.stringify(rows) },
          );
        }
        if (approvals.length > 0) {
          await trx('approvals').insert(approvals).onConflict(['run_id', 'item_seq', 'node_id', 'call_id']).ignore();
        }
        if (reviews.length > 0) await trx('item_reviews').insert(reviews).onConflict().ignore();
        if (planned.length > 0) await trx('planned_effects').insert(planned).onConflict('key').ignore();
        // Flagged items wait in this page's workflow for their review, as items wait for approvals.
        if (flagged.length > 0) {
          const pendingReviews = await trx('item_reviews')
            .where({ run_id: runId, status: 'pending' })
            .whereIn('item_seq', flagged)
            .select('id', 'item_seq', 'node_id');
          for (const r of pendingReviews) actions.push({ seq: r.item_seq, nodeId: r.node_id, reviewId: r.id });
        }
        await recordNodeActivity(trx, runId, counters);
        await appendRunLog(trx, logs);
        if (actions.length > 0 || !closingFollows) await refreshRunCounts(trx, runId);

        // Items waiting on a person carry the approval id the page workflow waits for (a model step's approvals,
        // keyed by call, reach the workflow from the step itself).
        if (actions.length === 0) return actions;
        const pending = await trx('approvals')
          .where({ run_id: runId })
          .whereNull('call_id')
          .whereIn(
            'item_seq',
            actions.map((a) => a.seq),
          )
          .select('id', 'item_seq', 'node_id');
        for (const a of actions) {
          a.approvalId = pending.find((p) => p.item_seq === a.seq && p.node_id === a.nodeId)?.id;
        }
        return actions;
      }),
    );
  };
}

/**
 * The results of a round of state-store operations, each recorded in the effects ledger under its item's key (run,
 * item, node) as a tool node's call is. A retried item takes its original item's recorded result instead of applying
 * the operation again (no second increment); a test run on past items reads the store but writes nothing to it.
 */
async function stateResults(
  trx: Knex.Transaction,
  run: RunRow,
  waiting: { item: ItemRow; op: StateOp }[],
): Promise<unknown[]> {
  const keyOf = (runId: string, seq: number, nodeId: string) => `${runId}:${seq}:${nodeId}`;
  const results: unknown[] = new Array(waiting.length);
  const toApply: number[] = [];
  const sourceKeys = new Map<number, string>();
  if (run.retry_of) {
    const sources: { seq: number; source_run_id: string; source_seq: number }[] = await trx('run_item_sources')
      .where({ run_id: run.id })
      .whereIn(
        'seq',
        waiting.map((w) => w.item.seq),
      )
      .select('seq', 'source_run_id', 'source_seq');
    for (const s of sources) sourceKeys.set(s.seq, `${s.source_run_id}:${s.source_seq}`);
  }
  const recorded = new Map<string, unknown>();
  const sourceLookups = waiting.flatMap(({ item }) => {
    const source = sourceKeys.get(item.seq);
    return source ? [`${source}:${item.node_id}`] : [];
  });
  if (sourceLookups.length > 0) {
    const rows = await trx('effects').whereIn('key', sourceLookups).select('key', 'result');
    for (const r of rows) recorded.set(r.key, r.result);
  }
  waiting.forEach(({ item, op }, i) => {
    const source = sourceKeys.get(item.seq);
    const sourceKey = source && `${source}:${item.node_id}`;
    if (op.op !== 'get' && sourceKey && recorded.has(sourceKey)) results[i] = recorded.get(sourceKey);
    else if (op.op !== 'get' && run.dry_run)
      results[i] = {
        planned: true,
        tool: `state.${op.op}`,
        arguments: op,
        note: 'test run: the state store was not changed',
      };
    else toApply.push(i);
  });
  const applied =
    toApply.length > 0
      ? await applyStateOps(
          trx,
          run.agent_id,
          toApply.map((i) => waiting[i].op),
        )
      : [];
  toApply.forEach((i, n) => (results[i] = applied[n]));

  const ledger = waiting.flatMap(({ item, op }, i) =>
    op.op === 'get'
      ? []
      : [{ key: keyOf(run.id, item.seq, item.node_id!), run_id: run.id, result: JSON.stringify(results[i] ?? null) }],
  );
  if (ledger.length > 0 && !run.dry_run) await trx('effects').insert(ledger).onConflict('key').ignore();
  const plans = run.dry_run
    ? waiting.flatMap(({ item, op }) =>
        op.op === 'get'
          ? []
          : [
              {
                key: keyOf(run.id, item.seq, item.node_id!),
                run_id: run.id,
                item_seq: item.seq,
                node_id: item.node_id!,
                kind: 'tool',
                tool: `state.${op.op}`,
                arguments: JSON.stringify(op),
                message: `would ${op.op} "${op.key}" in the state store`,
              },
            ],
      )
    : [];
  if (plans.length > 0) await trx('planned_effects').insert(plans).onConflict('key').ignore();
  return results;
}

export function createPageAdvanceActivities(deps: ActivityDeps) {
  const advance = pageAdvancer(deps);
  return {
    advancePage: async (range: PageRange): Promise<StepAction[]> =>
      advance(await loadRun(deps.knex, range.runId), range),
  };
}

function recordPage(span: SpanRecorder, items: ItemRow[], changed: ItemRow[], waiting: number): void {
  const failed = changed.filter((i) => i.status === 'failed');
  span.setAttributes({
    'cadre.page.items': items.length,
    'cadre.page.items_done': changed.filter((i) => i.status === 'done').length,
    'cadre.page.items_failed': failed.length,
    'cadre.page.items_waiting': waiting,
  });
  for (const item of failed) {
    span.addEvent('item failed', { 'cadre.item.seq': item.seq, 'error.message': item.error ?? undefined });
  }
}
