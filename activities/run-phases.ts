// A run's opening and closing phases, each in one activity. Event-driven agents start many runs of a few items
// each, and there the engine's cost is per activity and per workflow, not per item: bench:runs measured a
// one-item run at four activities and a child workflow, three times raw Temporal's CPU for one activity. Opening
// takes a small run as far as it goes without a per-item call (and ends it when nothing is left), so a run of
// set-based nodes is a single activity; closing settles the run, sends the failure notice and opens chained runs.
// Every part is idempotent already (they were separate activities, retried on their own), so a retry of the
// whole phase is safe. A small run that needs no per-item step is settled at once, in one statement
// (run-lifecycle.ts settleAtOnce). Runs the web starts (agentRunV3) call the opening as a local activity.
import { chainedRunOpener, type OpenedRun } from './triggers';
import { pageAdvancer } from './page-advance';
import type { StepAction } from './page-walk';
import { runLifecycle, type FinishRunInput, type RunPlan } from './run-lifecycle';
import { failureNotifier } from './failure-notice';
import { Context } from '@temporalio/activity';
import { loadPhaseRun, type ActivityDeps, type PhaseRun } from './deps';

export interface RunEnd {
  status: string;
  /** Runs of chained agents this run's end opened; the workflow starts them. */
  chained: OpenedRun[];
}

export type RunOpening =
  | { plan: RunPlan; ended: RunEnd }
  /** `actions`: the per-item steps of a run of one page, already advanced to them. */
  | { plan: RunPlan; actions?: StepAction[]; ended?: undefined };

export type CloseRunInput = FinishRunInput;

export function createRunPhaseActivities(deps: ActivityDeps) {
  const { prepareOrSettle, finish } = runLifecycle(deps);
  const advance = pageAdvancer(deps);
  const notifyFailures = failureNotifier(deps);
  const openChained = chainedRunOpener(deps);

  /** What follows a run's end: the failure notice, and the runs of agents chained to it. */
  async function afterEnd(run: PhaseRun, status: string): Promise<RunEnd> {
    // A test run on past items acts nowhere: no notice goes out and no chained agent runs on its end.
    if (run.dry_run) return { status, chained: [] };
    // The notice is a courtesy: a mail server that stays down must not keep a run that has ended from closing.
    await notifyFailures(run).catch(() => undefined);
    return { status, chained: run.chained === false ? [] : await openChained({ ...run, status }) };
  }

  // Each phase reads the run's row once (with its agent's state, and whether chains start from it) and hands it
  // to its parts: a one-item run's whole life is one activity, and every statement saved there is saved per run.
  const close = async (run: PhaseRun, input: CloseRunInput) => afterEnd(run, await finish(run, input));

  return {
    closeRun: async (input: CloseRunInput): Promise<RunEnd> => close(await loadPhaseRun(deps.knex, input.runId), input),

    async openRun({ runId }: { runId: string }): Promise<RunOpening> {
      const run = await loadPhaseRun(deps.knex, runId);
      const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
      const { plan, settled } = await prepareOrSettle(run, workflowId);
      if (settled) return { plan, ended: await afterEnd({ ...run, status: settled }, settled) };
      if (plan.skipped || plan.total > plan.pageSize) return { plan };
      const actions = await advance(run, { runId, fromSeq: 0, toSeq: plan.total }, { closingFollows: true });
      if (actions.length > 0) return { plan, actions };
      return { plan, ended: await close(run, { runId }) };
    },
  };
}
