// A run's opening and closing phases, each in one activity. Event-driven agents start many runs of a few items
// each, and there the engine's cost is per activity and per workflow, not per item: bench:runs measured a
// one-item run at four activities and a child workflow, three times raw Temporal's CPU for one activity. Opening
// takes a small run as far as it goes without a per-item call (and ends it when nothing is left), so a run of
// set-based nodes is a single activity; closing settles the run, sends the failure notice and opens chained runs.
// Every part is idempotent already (they were separate activities, retried on their own), so a retry of the
// whole phase is safe.
import type { OpenedRun } from './triggers';
import type { StepAction } from './page-advance';
import type { RunPlan } from './run-lifecycle';
import { createFailureNoticeActivities } from './failure-notice';
import { createPageAdvanceActivities } from './page-advance';
import { createRunLifecycleActivities } from './run-lifecycle';
import { createTriggerActivities } from './triggers';
import type { ActivityDeps } from './deps';

export interface RunEnd {
  status: string;
  /** Runs of chained agents this run's end opened; the workflow starts them. */
  chained: OpenedRun[];
}

export type RunOpening =
  | { plan: RunPlan; ended: RunEnd }
  /** `actions`: the per-item steps of a run of one page, already advanced to them. */
  | { plan: RunPlan; actions?: StepAction[]; ended?: undefined };

export interface CloseRunInput {
  runId: string;
  cancelled?: boolean;
  stoppedBy?: string;
  error?: string;
}

export function createRunPhaseActivities(deps: ActivityDeps) {
  const { prepareRun, finishRun } = createRunLifecycleActivities(deps);
  const { advancePage } = createPageAdvanceActivities(deps);
  const { notifyFailures } = createFailureNoticeActivities(deps);
  const { openChainedRuns } = createTriggerActivities(deps);

  async function closeRun(input: CloseRunInput): Promise<RunEnd> {
    const status = await finishRun(input);
    // The notice is a courtesy: a mail server that stays down must not keep a run that has ended from closing.
    await notifyFailures({ runId: input.runId }).catch(() => undefined);
    return { status, chained: await openChainedRuns({ runId: input.runId }) };
  }

  return {
    closeRun,

    async openRun({ runId }: { runId: string }): Promise<RunOpening> {
      const plan = await prepareRun({ runId });
      if (plan.skipped || plan.total > plan.pageSize) return { plan };
      const actions = await advancePage({ runId, fromSeq: 0, toSeq: plan.total });
      if (actions.length > 0) return { plan, actions };
      return { plan, ended: await closeRun({ runId }) };
    },
  };
}
