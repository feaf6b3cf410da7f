// A run's `paused` status, and who paused or resumed it, stored as a person asks. The run's workflow holds the pause
// itself (a signal in its history); these rows are what the API, the console and the timeline read.
import type { Knex } from 'knex';
import { appendRunLog, refreshRunCounts } from './run-progress';
import { recordEvent } from './timeline';

interface PausedRun {
  id: string;
  workspace_id: string;
  agent_id: string;
}

/** Marks a running run paused; false, having written nothing, when it was not running (paused, or ended). */
export async function markRunPaused(knex: Knex, run: PausedRun, by: string): Promise<boolean> {
  return knex.transaction(async (trx) => {
    const changed = await trx('runs')
      .where({ id: run.id })
      .whereIn('status', ['running', 'needs_review'])
      .update({ status: 'paused' });
    if (changed === 0) return false;
    await note(trx, run, 'run_paused', by);
    return true;
  });
}

/**
 * Marks a paused run running again (needs_review when approvals or flagged items wait on a person); false, having
 * written nothing, when it was not paused.
 */
export async function markRunResumed(knex: Knex, run: PausedRun, by: string): Promise<boolean> {
  return knex.transaction(async (trx) => {
    const changed = await trx('runs').where({ id: run.id, status: 'paused' }).update({ status: 'running' });
    if (changed === 0) return false;
    await refreshRunCounts(trx, run.id);
    await note(trx, run, 'run_resumed', by);
    return true;
  });
}

async function note(trx: Knex.Transaction, run: PausedRun, kind: 'run_paused' | 'run_resumed', by: string) {
  const message = `run ${kind === 'run_paused' ? 'paused' : 'resumed'} by ${by}`;
  await appendRunLog(trx, [{ run_id: run.id, level: 'info', message }]);
  await recordEvent(trx, {
    workspace_id: run.workspace_id,
    agent_id: run.agent_id,
    kind,
    run_id: run.id,
    message,
    details: { by },
  });
}
