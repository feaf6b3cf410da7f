// A run of an agent version: expands the input into items, then carries them through the graph in pages of
// child workflows with a sliding window, continuing as new before the history grows large. Item data lives in
// Postgres; this history holds only ids and counts (DESIGN.md "claim check").
import {
  CancelledFailure,
  CancellationScope,
  condition,
  continueAsNew,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CloseRunInput, RunOpening } from '../activities/run-phases';
import type { OpenedRun } from '../activities/triggers';
import { openDesk, pausePatch, runPage, type RunPageInput } from './run-page';
import {
  holdSignal,
  pageWorkflowId,
  pauseSignal,
  progressQuery,
  resumeSignal,
  type AgentRunInput,
  type HoldState,
} from './contracts';
import { currentRunTypePatch, runWorkflowOptions } from '../model/run-identity';
import { pageLanes } from './page-lanes';

const db = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 10 },
});

// The opening as a local activity (agentRunV3): it runs in the worker that holds the workflow task, so the server
// neither schedules, dispatches nor records an activity task for it. A lost worker is noticed when the workflow
// task times out, and the opening runs again on another: it is idempotent (a run's first step claims it).
const localDb = proxyLocalActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 10 },
});

/**
 * A run, as every new run starts (model/run-identity.ts currentRunType), whichever door opened it; the web's since its
 * opening became a local activity, the engine's (schedules, batches, event polls, chains, agent calls) since
 * currentRunTypePatch. A one-item run of set-based nodes is then one workflow task that runs its whole life in the worker:
 * six events, and about a quarter less of the server's CPU per run than with an activity (bench:runs).
 */
export async function agentRunV3(input: AgentRunInput): Promise<string> {
  return runAgent(input, { phased: true, localOpening: true, chainType: agentRunV3 });
}

/**
 * The type of runs started by the web between agentRunV2's arrival and agentRunV3's, kept for their recorded
 * histories. It never asked `patched('run-phases')`: asking writes a marker and a search-attribute upsert into
 * every history, a tenth of the server's CPU for a one-item run (bench:runs). A new type never needs to ask: a
 * worker that does not know it yet (web processes upgrade first) fails its task until an upgraded worker takes
 * it, where a patch dropped from a type would break the replay of its runs under way.
 */
export async function agentRunV2(input: AgentRunInput): Promise<string> {
  return runAgent(input, { phased: true, localOpening: false, chainType: agentRunV2 });
}

/**
 * The run type of runs started before agentRunV2, and of runs other workflows started (schedules, event polls,
 * delivery batches, chains and agent calls) before they started the current type (currentRunTypePatch); kept for
 * their recorded histories.
 */
export async function agentRun(input: AgentRunInput): Promise<string> {
  // Runs that began before a run's opening and closing became one activity each replay the way they ran.
  return runAgent(input, { phased: patched('run-phases'), localOpening: false, chainType: agentRun });
}

interface RunShape {
  /** The opening and closing are one activity each (else prepareRun and finishRun, as the oldest runs had). */
  phased: boolean;
  /** The opening is a local activity. */
  localOpening: boolean;
  /** The type chained runs start as (a history records it, so each type keeps its own). */
  chainType: typeof agentRun;
}

async function runAgent(input: AgentRunInput, { phased, localOpening, chainType }: RunShape): Promise<string> {
  const { runId } = input;
  const close = async (how: Omit<CloseRunInput, 'runId'>): Promise<string> => {
    if (!phased) {
      const status = await CancellationScope.nonCancellable(() => db.finishRun({ runId, ...how }));
      await afterEnd(runId, chainType);
      return status;
    }
    const ended = await CancellationScope.nonCancellable(() => db.closeRun({ runId, ...how }));
    await CancellationScope.nonCancellable(() => startChained(ended.chained, chainType));
    return ended.status;
  };
  // The opening may already stop the first page's items for a person, and a run of one page waits for them here.
  const desk = phased ? openDesk(runId) : undefined;
  // A run of one page shares its hold with the page it runs itself; page children are told by signal.
  const hold: HoldState = desk?.hold ?? { paused: false, seq: 0 };
  const childPages = new Set<number>();
  const holdPages = (paused: boolean) => {
    if (hold.paused === paused || !patched(pausePatch)) return;
    hold.paused = paused;
    hold.seq++;
    for (const page of childPages) void tellPage(page, { ...hold });
  };
  /** A page started a moment ago may not exist for the server yet: try again while it runs. */
  const tellPage = async (page: number, state: HoldState) => {
    const handle = getExternalWorkflowHandle(pageWorkflowId(workflowInfo().workflowId, page));
    for (;;) {
      try {
        return await handle.signal(holdSignal, state);
      } catch (err) {
        if (isCancellation(err) || !childPages.has(page) || hold.seq !== state.seq) return;
        await sleep('1 second');
      }
    }
  };
  setHandler(pauseSignal, () => holdPages(true));
  setHandler(resumeSignal, () => holdPages(false));
  let opening: RunOpening;
  try {
    opening = phased
      ? await (localOpening ? localDb : db).openRun({ runId })
      : { plan: await db.prepareRun({ runId }) };
  } catch (err) {
    const cancelled = isCancellation(err);
    return ended(await close({ error: `the input could not be read: ${failureMessage(err)}`, cancelled }), err);
  }
  if (opening.ended) {
    await CancellationScope.nonCancellable(() => startChained(opening.ended.chained, chainType));
    return ended(opening.ended.status);
  }
  const { plan, actions: firstActions } = opening;
  if (plan.skipped) return 'skipped';
  const pages = Math.ceil(plan.total / plan.pageSize);
  let nextPage = input.nextPage ?? 0;
  let pagesDone = nextPage;
  let failed = input.failedSoFar ?? 0;
  setHandler(progressQuery, () => ({ pages, pagesDone, failedItems: failed }));

  let stoppedBy: string | undefined;
  let cancelled = false;
  let cancellation: unknown;
  let error: string | undefined;
  const scope = new CancellationScope();
  try {
    await scope.run(async () => {
      const running = new Map<number, Promise<void>>();
      // The concurrency cap is the run's, not each page's: pages run side by side in lanes, and the cap is
      // shared out among the lanes (a run with one page left to do gives it the whole cap).
      const laneCaps = pageLanes(plan.concurrency, plan.pageWindow, pages - nextPage);
      const freeLanes = laneCaps.map((_, lane) => lane);
      const start = (page: number) => {
        const fromSeq = page * plan.pageSize;
        const lane = freeLanes.shift()!;
        const pageInput: RunPageInput = {
          runId,
          fromSeq,
          toSeq: Math.min(plan.total, fromSeq + plan.pageSize),
          plan: { ...plan, concurrency: laneCaps[lane] },
        };
        // A run of one page runs it in this workflow, from where the opening left it; larger runs page in
        // children, so that no history grows with the number of items.
        if (!firstActions) childPages.add(page);
        const child = (
          firstActions
            ? runPage({ ...pageInput, firstActions }, desk)
            : executeChild(runPage, { workflowId: pageWorkflowId(workflowInfo().workflowId, page), args: [pageInput] })
        ).then((r) => {
          freeLanes.push(lane);
          running.delete(page);
          childPages.delete(page);
          pagesDone++;
          failed += r.failed;
          if (plan.stopOnFailure && r.failed > 0 && !stoppedBy) {
            stoppedBy = `stopped after an item failed (error policy "stop")`;
            scope.cancel();
          }
        });
        running.set(page, child);
      };
      while (nextPage < pages || running.size > 0) {
        // Start no new page while paused, nor once Temporal suggests a fresh history (drain, then continue as new).
        while (
          !hold.paused &&
          running.size < laneCaps.length &&
          nextPage < pages &&
          !workflowInfo().continueAsNewSuggested
        ) {
          start(nextPage++);
        }
        // Waits for the resume only while paused, so a run never paused awaits what it always did (replay).
        const resumed = hold.paused && nextPage < pages ? condition(() => !hold.paused) : undefined;
        if (running.size === 0) {
          if (!resumed) break;
          await resumed;
          continue;
        }
        await Promise.race(resumed ? [...running.values(), resumed] : running.values());
      }
    });
  } catch (err) {
    if (isCancellation(err)) {
      cancelled = stoppedBy === undefined;
      cancellation = err;
    } else error = failureMessage(err);
  }
  if (!cancelled && !stoppedBy && !error && nextPage < pages) {
    return continueAsNew<typeof agentRun>({ runId, nextPage, failedSoFar: failed });
  }
  return ended(await close({ cancelled, stoppedBy, error }), cancellation);
}

/** Runs cancelled before this patch completed their workflow with "cancelled": their histories replay that way. */
export const cancelledRunPatch = 'cancelled-run-ends-canceled';

/**
 * How the workflow ends once the run is stored with `status`. A run cancelled through its workflow (the API, the
 * Temporal UI, a parent's cancel) throws the cancellation again after its cleanup, so that the execution closes as
 * Canceled, not Completed, in `temporal workflow list` and the Temporal UI. A cancellation that came too late to stop
 * the run (it had already ended otherwise) leaves the execution Completed, as does a run stopped from inside. The
 * patch is asked only here, so a run that is not cancelled records no marker.
 */
function ended(status: string, cancellation?: unknown): string {
  if (status === 'cancelled' && CancellationScope.current().consideredCancelled && patched(cancelledRunPatch)) {
    throw isCancellation(cancellation) ? cancellation : new CancelledFailure('the run was cancelled');
  }
  return status;
}

/** What a run's end sets off, however it ended: the failure notice, and chains. */
async function afterEnd(runId: string, chainType: typeof agentRun): Promise<void> {
  // Cancellation of this run must not stop them (a chain may be on "cancelled").
  await CancellationScope.nonCancellable(async () => {
    // The notice is a courtesy: a mail server that stays down must not fail a run that has already ended.
    await db.notifyFailures({ runId }).catch(() => undefined);
    await startChained(await db.openChainedRuns({ runId }), chainType);
  });
}

/** Agents chained to this one ("when A completes, run B") start now, as abandoned children of this run. */
async function startChained(chained: OpenedRun[], type: typeof agentRun): Promise<void> {
  for (const run of chained) {
    // A run of an older type chained runs of its own type until they all started the current one.
    const current = type === agentRunV3 || patched(currentRunTypePatch);
    await startChild(current ? agentRunV3 : type, {
      ...runWorkflowOptions(run),
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
  }
}

function failureMessage(err: unknown): string {
  let e: unknown = err;
  // Activity and child failures wrap the real reason in `cause`.
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}
