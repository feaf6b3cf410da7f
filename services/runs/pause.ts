// Pausing and resuming a run: the one path shared by POST /v1/runs/{id}/pause|resume and Chat Mode's tools. The
// workflow learns it by signal (it lands while every worker is down, and stays in the run's history); the run's row
// says `paused` and the agent's timeline who asked, and when. Both are idempotent: pausing a paused run or resuming
// a running one changes nothing and answers the run as it stands, so a client may retry a request whose answer it
// lost. A run that has ended answers 409.
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Knex } from 'knex';
import { endedRunStatuses, getRun, type RunRecord } from '../../db/runs';
import { markRunPaused, markRunResumed } from '../../db/run-pause';
import { runWorkflowId } from '../../model/run-identity';
import { pauseSignal, resumeSignal } from '../../workflows/contracts';
import { ApiError } from '../errors';
import { ensureRunWorkflow, type RunDispatchDeps } from './dispatch';

export type RunPauseDeps = RunDispatchDeps;

export async function pauseRun(deps: RunPauseDeps, workspaceId: string, runId: string, by: string) {
  const run = await loadOpenRun(deps.knex, workspaceId, runId, 'pause');
  if (run.status === 'paused') return run;
  await signalRun(deps, run, 'pause');
  await markRunPaused(deps.knex, run, by);
  return loadOpenRun(deps.knex, workspaceId, runId, 'pause');
}

export async function resumeRun(deps: RunPauseDeps, workspaceId: string, runId: string, by: string) {
  const run = await loadOpenRun(deps.knex, workspaceId, runId, 'resume');
  if (run.status !== 'paused') return run;
  await signalRun(deps, run, 'resume');
  await markRunResumed(deps.knex, run, by);
  return loadOpenRun(deps.knex, workspaceId, runId, 'resume');
}

async function loadOpenRun(knex: Knex, workspaceId: string, runId: string, what: 'pause' | 'resume') {
  const run = await getRun(knex, workspaceId, runId);
  if (!run) throw new ApiError(404, 'run_not_found', `no run ${runId} in this workspace`);
  if (endedRunStatuses.has(run.status))
    throw new ApiError(409, 'run_finished', `the run already ended (${run.status}); there is nothing to ${what}`);
  return run;
}

/** A run the web opened whose start has not landed yet is started first, as a cancel does, so the signal has a target. */
async function signalRun(deps: RunPauseDeps, run: RunRecord, what: 'pause' | 'resume') {
  const handle = deps.temporal.workflow.getHandle(runWorkflowId(run.id));
  const signal = what === 'pause' ? pauseSignal : resumeSignal;
  try {
    await handle.signal(signal);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    if (!run.start_pending) {
      await loadOpenRun(deps.knex, run.workspace_id, run.id, what); // it has just ended: 409 run_finished
      throw new ApiError(
        409,
        'run_not_started',
        `the run's workflow has not started yet; try the ${what} again shortly`,
      );
    }
    await ensureRunWorkflow(deps, run);
    await handle.signal(signal);
  }
}
