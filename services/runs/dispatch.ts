// Starting the workflow of a run the web opened. The caller is answered (202) once the run is stored, not once
// Temporal has started it: under a burst, the engine's start answers in 70–140 ms on a small machine, and the
// run's row is what makes it durable. The start is sent at once, off the request's path; the start sweep starts
// it again should it never land (the process died in between, Temporal was unreachable). Starting is idempotent:
// the workflow id is the run's, and Temporal refuses a second start of it, whether the first is running or closed,
// so a run has one execution, ever (a run whose workflow closed without storing its items stays as it is, for a
// person to look at, rather than be started again and again).
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { markRunsStarted, runsAwaitingStart } from '../../db/open-run';
import type { RunRecord } from '../../db/runs';
import type { Logger } from 'pino';
import { currentRunType, runWorkflowId, runWorkflowOptions } from '../../model/run-identity';
import type { TemporalConfig } from '../../temporal.config';
import type { agentRunV3 } from '../../workflows/agent-run';

export interface RunDispatchDeps {
  knex: Knex;
  temporal: Client;
  temporalConfig: TemporalConfig;
}

type StartableRun = Pick<RunRecord, 'id' | 'workspace_id' | 'agent_id' | 'trigger'>;

/** Starts the run's workflow as the current run type, unless it has started already. */
export async function ensureRunWorkflow(
  deps: Pick<RunDispatchDeps, 'temporal' | 'temporalConfig'>,
  run: StartableRun,
): Promise<'started' | 'already_started'> {
  try {
    await deps.temporal.workflow.start<typeof agentRunV3>(currentRunType, {
      ...runWorkflowOptions(run),
      taskQueue: deps.temporalConfig.taskQueue,
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw err;
  }
}

/**
 * Sends the start without waiting for it; a start that fails is the sweep's to retry. One that lands is marked,
 * so the sweep leaves the run alone however long it then waits behind a backlog (it would otherwise send the start
 * again, every pass, for every run queued longer than its age).
 */
export function dispatchRunStart(deps: RunDispatchDeps, run: StartableRun, onError: (err: Error) => void): void {
  ensureRunWorkflow(deps, run).then(() => markStartedSoon(deps.knex, run.id), onError);
}

// The marks of landed starts, written in one statement per `markDelayMs` rather than one per run. A mark lost to a
// crash costs the sweep one start that Temporal answers "already started".
const markDelayMs = 250;
const pendingMarks = new Map<Knex, string[]>();

function markStartedSoon(knex: Knex, runId: string): void {
  const ids = pendingMarks.get(knex);
  if (ids) {
    ids.push(runId);
    return;
  }
  pendingMarks.set(knex, [runId]);
  setTimeout(() => {
    const batch = pendingMarks.get(knex) ?? [];
    pendingMarks.delete(knex);
    markRunsStarted(knex, batch).catch(() => undefined); // the sweep finds them started
  }, markDelayMs).unref();
}

/**
 * Cancels a run's workflow. A run the web opened whose start has not landed yet is started first, so the cancel
 * has a target (its first step then finds it cancelled and stores nothing). Other runs are started by their
 * parent workflow, which must be the one to start them.
 */
export async function cancelRunWorkflow(
  deps: Pick<RunDispatchDeps, 'temporal' | 'temporalConfig'>,
  run: StartableRun & Pick<RunRecord, 'start_pending'>,
): Promise<void> {
  const handle = deps.temporal.workflow.getHandle(runWorkflowId(run.id));
  try {
    await handle.cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError) || !run.start_pending) throw err;
    await ensureRunWorkflow(deps, run);
    await handle.cancel();
  }
}

/**
 * One pass of the start sweep: starts the workflows of the web's runs opened more than `olderThanSeconds` ago
 * that have not stored their items, oldest first. Those found already started (waiting behind a backlog) are
 * marked, so later passes skip them. Stops at the first failure other than "already started": Temporal is
 * unreachable, and the next pass tries again. Returns how many it started.
 */
export async function sweepUnstartedRuns(
  deps: RunDispatchDeps,
  opts: { olderThanSeconds: number; limit?: number },
): Promise<number> {
  const runs = await runsAwaitingStart(deps.knex, opts.olderThanSeconds, opts.limit ?? 100);
  const known: string[] = [];
  let started = 0;
  try {
    for (const run of runs) {
      if ((await ensureRunWorkflow(deps, run)) === 'started') started++;
      known.push(run.id);
    }
  } finally {
    await markRunsStarted(deps.knex, known);
  }
  return started;
}

/**
 * Sweeps every `intervalMs` in the background, one pass at a time. Every web process runs one: starts are
 * idempotent, so two processes sweeping the same run start it once.
 */
export function startRunSweeper(
  deps: RunDispatchDeps,
  opts: { intervalMs: number; olderThanSeconds: number; logger: Pick<Logger, 'info' | 'warn'> },
): { stop(): Promise<void> } {
  let pass: Promise<void> | undefined;
  const timer = setInterval(() => {
    pass ??= sweepUnstartedRuns(deps, opts)
      .then(
        (started) => {
          if (started > 0)
            opts.logger.info({ started }, 'started the workflows of runs whose first start never landed');
        },
        (err: Error) => opts.logger.warn({ err: err.message }, 'the run start sweep stopped early; it tries again'),
      )
      .finally(() => (pass = undefined));
  }, opts.intervalMs);
  timer.unref();
  return {
    /** Waits a little for a pass under way; one stuck on an unreachable Temporal is left to the next process. */
    async stop() {
      clearInterval(timer);
      await Promise.race([pass, new Promise((r) => setTimeout(r, 2_000).unref())]);
    },
  };
}
