// Retrying a run's failed items: a new run of the same agent version (or its current one) over just those items,
// opened like any other run (services/runs/start.ts: live check, plan allowance). An item whose call may have acted in
// another system (the effects ledger has its attempt but neither a result nor a refusal) is held back rather than
// retried: a lost answer must never become a second payment. A retried item takes the effects its original item
// already had (activities/effects-ledger.ts), so the steps it passed are not performed again.
import { claimForRetry, failedItems, releaseRetryClaims, type FailedItem } from '../../db/item-sources';
import { endedRunStatuses, getRun, type RunRecord } from '../../db/runs';
import type { Workspace } from '../../db/workspaces';
import { ApiError } from '../errors';
import { currentAgent, startRun, type RunServiceDeps } from './start';

export interface RetryRequest {
  items: 'failed' | number[];
  /** `current`: on the agent's current version; by default the version the run pinned. */
  version?: 'current' | 'same';
}

/** A failed item left out of the retry, and why. */
export interface HeldBackItem {
  item_seq: number;
  reason: 'effect_in_doubt';
  message: string;
  calls: FailedItem['in_doubt'];
}

const numbered = (seqs: number[]) => seqs.join(', ');

const retryUnderWay = (runId: string) =>
  new ApiError(
    409,
    'retry_under_way',
    `another retry of run ${runId} was started at the same moment: reload the run to see it, then retry what still failed`,
  );

export async function retryRun(
  deps: RunServiceDeps,
  workspace: Workspace,
  runId: string,
  body: RetryRequest,
): Promise<{ run: RunRecord; retried: number[]; held_back: HeldBackItem[] }> {
  const { knex } = deps;
  const run = await getRun(knex, workspace.id, runId);
  if (!run) throw new ApiError(404, 'run_not_found', `no run ${runId} in this workspace`);
  if (run.dry_run)
    throw new ApiError(
      409,
      'test_run_not_retried',
      'a test run on past items acts nowhere, so there is nothing to retry: start another test run',
    );
  if (!endedRunStatuses.has(run.status))
    throw new ApiError(
      409,
      'run_not_finished',
      `the run is ${run.status}: its items can be retried once it has ended (cancel it first to retry now)`,
      {},
      { run_status: run.status },
    );
  const failed = await failedItems(knex, run.id);
  if (failed.length === 0) throw new ApiError(409, 'no_failed_items', 'the run has no failed items to retry');

  let chosen: FailedItem[];
  if (body.items === 'failed') {
    chosen = failed.filter((f) => !f.retried_by);
    if (chosen.length === 0) {
      const runs = [...new Set(failed.map((f) => f.retried_by))];
      throw new ApiError(
        409,
        'already_retried',
        `every failed item of this run was already retried (by run ${runs.join(', ')}); retry that run's failed items instead`,
        {},
        { retried_by: runs },
      );
    }
  } else {
    const asked = [...new Set(body.items)];
    const outside = asked.filter((seq) => seq >= run.total);
    if (outside.length > 0)
      throw new ApiError(
        422,
        'no_such_items',
        `the run has no item ${numbered(outside)}: its ${run.total} items are numbered 0 to ${run.total - 1}`,
        {},
        { items: outside },
      );
    const bySeq = new Map(failed.map((f) => [f.seq, f]));
    const notFailed = asked.filter((seq) => !bySeq.has(seq));
    if (notFailed.length > 0)
      throw new ApiError(
        422,
        'items_not_failed',
        `item ${numbered(notFailed)} did not fail; only failed items are retried (the failed ones: ${numbered(failed.map((f) => f.seq))})`,
        {},
        { items: notFailed },
      );
    chosen = asked.sort((a, b) => a - b).map((seq) => bySeq.get(seq)!);
    const taken = chosen.filter((f) => f.retried_by);
    if (taken.length > 0)
      throw new ApiError(
        409,
        'already_retried',
        `item ${numbered(taken.map((f) => f.seq))} was already retried (by run ${[...new Set(taken.map((f) => f.retried_by))].join(', ')}); retry that run's failed items instead`,
        {},
        { items: taken.map((f) => f.seq) },
      );
  }

  const held_back: HeldBackItem[] = chosen
    .filter((f) => f.in_doubt.length > 0)
    .map((f) => ({
      item_seq: f.seq,
      reason: 'effect_in_doubt' as const,
      message: `item ${f.seq}: ${f.in_doubt.map((c) => `${c.tool} (${c.node_id})`).join(', ')} got no answer and may have acted; check the other system before handling this item by hand`,
      calls: f.in_doubt,
    }));
  const retried = chosen.filter((f) => f.in_doubt.length === 0).map((f) => f.seq);
  if (retried.length === 0)
    throw new ApiError(
      409,
      'effects_in_doubt',
      `no item was retried: ${held_back.map((h) => h.message).join('; ')}`,
      {},
      { held_back },
    );

  // A retry of a test run is a test run (any state); any other retry needs the agent live, as any run does.
  const trigger = run.trigger === 'test' ? 'test' : 'manual';
  const agent = await currentAgent(knex, workspace, run.agent_id, trigger);
  const version = body.version === 'current' ? agent.current_version : run.agent_version;
  // Two people retrying the same run at once: each item is claimed by one retry only, and a retry that does not
  // open its run gives its claims back.
  const claimed = await claimForRetry(knex, run.id, retried);
  if (claimed.length < retried.length) {
    await releaseRetryClaims(knex, run.id, claimed);
    throw retryUnderWay(run.id);
  }
  let opened;
  try {
    opened = await startRun(deps, {
      workspace,
      agent,
      trigger,
      version,
      input: `retry of run ${run.id}: item ${numbered(retried)}`,
      itemsFrom: { items: retried.map((seq) => ({ runId: run.id, seq })), retryOf: run.id },
    });
  } catch (err) {
    await releaseRetryClaims(knex, run.id, claimed);
    throw err;
  }
  return { run: opened.run, retried, held_back };
}
