// One page of a run's items (at most 1,000). Set-based nodes run in one activity per round; per-item steps fan
// out under the agent's concurrency cap; approvals wait here for a reviewer's decision.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Decision, StepResult } from '../activities/step-results';
import type { StepAction } from '../activities/page-walk';
import type { RunPlan } from '../activities/run-lifecycle';
import {
  decideSignal,
  decideUpdate,
  holdSignal,
  pendingApprovalsQuery,
  reviewUpdate,
  type AgentRunWorkflow,
  type ApprovalDecision,
  type HoldState,
} from './contracts';
import { currentRunType, currentRunTypePatch, runWorkflowOptions } from '../model/run-identity';

export interface RunPageInput {
  runId: string;
  fromSeq: number;
  toSeq: number;
  plan: RunPlan;
  /** The page's per-item steps, when the run's opening already advanced it (a run of one page). */
  firstActions?: StepAction[];
}

export interface RunPageResult {
  failed: number;
}

/**
 * Asked by the pause, resume and hold handlers before they act. A run under way at an upgrade may have been sent a
 * pause while an older worker, with no handler, held it: that worker ignored the signal, and its history goes on as
 * if it had never come. Replayed here, the signal finds no marker and is ignored again; one taken by this code
 * records the marker, and replays as taken.
 */
export const pausePatch = 'run-pause';

// Activities heartbeat every 2 s (activities/heartbeat.ts): a lost worker is noticed after 10 s.
const db = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 10 },
});

/**
 * Where people's decisions reach a page: the approvals and flagged items it waits on, and the handlers that take
 * decisions on them. A run of one page opens it before its first activity (which may already stop items for a
 * person), so a reviewer who decides the moment an approval appears is not refused for being early: an update that
 * arrives before its handler is registered is rejected.
 */
export function openDesk(runId: string) {
  const waiting = new Set<string>(); // approval ids this page waits on
  const decisions = new Map<string, ApprovalDecision>();
  // Thrown as an ApplicationFailure: from the handler, it fails that one update (answered 409 by the API). Two
  // decisions taken in one workflow task both pass the validator, and the later one only learns here that it lost;
  // any other error would fail the whole workflow task, and with it every decision in it.
  // The failure names the decision taken and who took it (its row may not be written yet), for the one who lost.
  const validate = (d: ApprovalDecision) => {
    const first = decisions.get(d.approvalId);
    if (first)
      throw ApplicationFailure.create({
        message: `approval ${d.approvalId} is already decided`,
        type: 'ApprovalDecided',
        nonRetryable: true,
        details: [{ approve: first.approve, by: first.by }],
      });
  };
  const accept = async (d: ApprovalDecision) => {
    // The approval row is committed by the page activity just before this workflow learns of it, so a fast
    // reviewer can be a moment early: wait briefly for it rather than refuse.
    if (!(await condition(() => waiting.has(d.approvalId), '30 seconds'))) {
      throw ApplicationFailure.nonRetryable(`approval ${d.approvalId} is not waiting in this run`, 'UnknownApproval');
    }
    validate(d); // and taken at once, with no await between: the first of concurrent decisions wins
    decisions.set(d.approvalId, d);
    await db.recordDecision({
      approvalId: d.approvalId,
      decision: { approved: d.approve, arguments: d.arguments, by: d.by, reason: d.reason },
      status: d.approve ? 'approved' : 'rejected',
    });
  };
  setHandler(decideUpdate, accept, { validator: validate });
  setHandler(decideSignal, async (d) => {
    if (!decisions.has(d.approvalId)) await accept(d).catch(() => undefined); // a signal has no one to answer
  });
  setHandler(pendingApprovalsQuery, () => [...waiting].filter((id) => !decisions.has(id)));

  // Flagged items wait here for a reviewer; the decision is applied by the update itself, so its answer says
  // whether it took, and the item is released once it has.
  const reviewsWaiting = new Set<string>();
  const reviewsApplied = new Set<string>();
  setHandler(
    reviewUpdate,
    async ({ reviewId, decision, by }) => {
      if (!(await condition(() => reviewsWaiting.has(reviewId), '30 seconds'))) {
        throw ApplicationFailure.nonRetryable(`review ${reviewId} is not waiting in this run`, 'UnknownReview');
      }
      const outcome = await db.applyReview({ runId, reviewId, decision, by });
      if (outcome === 'already_decided')
        throw ApplicationFailure.nonRetryable(`review ${reviewId} is already decided`, 'ReviewDecided');
      reviewsApplied.add(reviewId);
    },
    {
      validator: ({ reviewId }) => {
        if (reviewsApplied.has(reviewId))
          throw ApplicationFailure.nonRetryable(`review ${reviewId} is already decided`, 'ReviewDecided');
      },
    },
  );
  const awaitReview = async (reviewId: string) => {
    reviewsWaiting.add(reviewId);
    await condition(() => reviewsApplied.has(reviewId));
  };
  // A paused run's page starts no step (items inside one finish it) until the run is resumed.
  const hold: HoldState = { paused: false, seq: 0 };
  setHandler(holdSignal, ({ paused, seq }) => {
    if (seq <= hold.seq || !patched(pausePatch)) return;
    hold.paused = paused;
    hold.seq = seq;
  });
  return { waiting, decisions, awaitReview, hold };
}
export type Desk = ReturnType<typeof openDesk>;

export async function runPage(
  { runId, fromSeq, toSeq, plan, firstActions }: RunPageInput,
  desk: Desk = openDesk(runId),
): Promise<RunPageResult> {
  const steps = proxyActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '10 seconds',
    // executeStep fails the item itself once the step's own errors use up `itemAttempts`; the extra
    // attempts here are for the infrastructure (a lost worker, a database restart), not for the item.
    retry: {
      maximumAttempts: plan.itemAttempts + (plan.modelUnavailableRetries ?? 0) + 5,
      initialInterval: '1 second',
      backoffCoefficient: 2,
    },
  });

  const { waiting, decisions, awaitReview, hold } = desk;
  // While the run is paused, the wait for its resume; undefined otherwise, so that a run never paused awaits
  // nothing it did not await before, and its recorded history replays as it ran.
  const untilResumed = (): Promise<void> | undefined => (hold.paused ? condition(() => !hold.paused) : undefined);

  let failed = 0;
  let slots = plan.concurrency;
  // Steps waiting for a slot, first come first served. A freed slot passes straight to the first of them, in the
  // same activation: no condition over every waiting step is re-evaluated, and a page's waiting items are not
  // started (each with its own promises, which the SDK traces) until their turn.
  const line: (() => void)[] = [];
  const takeSlot = (): Promise<void> | undefined => {
    if (slots > 0) {
      slots--;
      return undefined;
    }
    return new Promise<void>((resolve) => line.push(resolve));
  };
  const freeSlot = () => {
    const next = line.shift();
    if (next) next();
    else slots++;
  };
  const inFlight = new Set<number>();
  let busy = 0; // steps running or queued for a slot (not those waiting on a person)
  let crash: unknown; // a step that failed beyond its own error handling (e.g. the database unreachable)

  async function awaitDecision(approvalId: string): Promise<Decision> {
    waiting.add(approvalId);
    const timedOut = !(await condition(() => decisions.has(approvalId), plan.approvalTimeoutSeconds * 1000));
    if (timedOut && plan.onApprovalTimeout !== 'escalate') {
      const approve = plan.onApprovalTimeout === 'approve';
      const decision = { approved: approve, by: 'policy', reason: 'approval timed out' };
      decisions.set(approvalId, { approvalId, approve, by: 'policy', reason: decision.reason });
      await db.recordDecision({ approvalId, decision, status: 'timed_out' });
      return decision;
    }
    if (timedOut) {
      await db.recordDecision({
        approvalId,
        decision: { approved: false, by: 'policy', reason: 'approval timed out: escalated' },
        status: 'escalated',
      });
      await condition(() => decisions.has(approvalId));
    }
    const d = decisions.get(approvalId)!;
    return { approved: d.approve, arguments: d.arguments, by: d.by, reason: d.reason };
  }

  /** A call_agent step: the called run is a child of this page, waited on or left to run on its own. */
  async function callAgent(action: StepAction, wait: boolean): Promise<void> {
    const ids = {
      runId,
      seq: action.seq,
      nodeId: action.nodeId,
      agentId: plan.agentId,
      agentVersion: plan.agentVersion,
    };
    const paused = untilResumed(); // the called run is something new: it starts after the resume
    if (paused) await paused;
    const opened = await steps.openAgentCall(ids);
    if ('outcome' in opened) {
      if (opened.outcome === 'failed') failed++;
      return;
    }
    const child = runWorkflowOptions(opened);
    const type = patched(currentRunTypePatch) ? currentRunType : 'agentRun';
    if (wait) {
      // Cancelling this run cancels the run it waits on, which then ends cancelled with its counts.
      await executeChild<AgentRunWorkflow>(type, {
        ...child,
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      }).catch((err) => {
        // A cancelled run's workflow ends Canceled: one cancelled on its own (not by this run's cancellation) is an
        // outcome of the call like any other end, which finishAgentCall reads from the called run.
        if (!isCancellation(err) || CancellationScope.current().consideredCancelled) throw err;
      });
    } else {
      await startChild<AgentRunWorkflow>(type, { ...child, parentClosePolicy: ParentClosePolicy.ABANDON });
    }
    const outcome = await steps.finishAgentCall({ ...ids, calledRunId: opened.id, waited: wait });
    if (outcome === 'failed') failed++;
  }

  /** Runs an item's step; `holdsSlot`: it was started with a slot already taken for it. */
  async function run(action: StepAction, holdsSlot = false): Promise<void> {
    if (action.reviewId) return awaitReview(action.reviewId);
    if (action.callAgent) return callAgent(action, action.callAgent.wait);
    const decision = action.approvalId ? await awaitDecision(action.approvalId) : undefined;
    let decisions: Record<string, Decision> | undefined;
    for (;;) {
      busy++;
      if (!holdsSlot) await takeSlot();
      holdsSlot = false;
      let result: StepResult;
      try {
        // A step not yet begun waits out a pause in its place under the cap (no activity runs meanwhile); a
        // decision taken during the pause is acted on here, after the resume.
        const paused = untilResumed();
        if (paused) await paused;
        result = await steps.executeStep({
          agentId: plan.agentId,
          agentVersion: plan.agentVersion,
          runId,
          seq: action.seq,
          nodeId: action.nodeId,
          decision,
          decisions,
          maxAttempts: plan.itemAttempts,
          modelUnavailableRetries: plan.modelUnavailableRetries ?? 0,
        });
      } finally {
        busy--;
        freeSlot();
      }
      if (typeof result === 'string') {
        if (result === 'failed') failed++;
        return;
      }
      // A model step stopped because its tool calls need a reviewer: its conversation waits in the database,
      // the item waits here holding no slot, and the step runs again with the decisions.
      const decided = await Promise.all(result.awaiting.map(async (id) => [id, await awaitDecision(id)] as const));
      decisions = Object.fromEntries(decided);
    }
  }

  // Advance the page whenever no step is running: items that finished a step move on through the set-based
  // nodes together, while items waiting on a person never hold the others back.
  let advanced = firstActions;
  for (;;) {
    // Items that finished a step move on after the resume: advancing runs their next set-based nodes.
    const paused = advanced ? undefined : untilResumed();
    if (paused) await paused;
    const actions = advanced ?? (await db.advancePage({ runId, fromSeq, toSeq }));
    advanced = undefined;
    const fresh = actions.filter((a) => !inFlight.has(a.seq));
    for (const a of fresh) {
      inFlight.add(a.seq);
      const start = (holdsSlot: boolean) => {
        void run(a, holdsSlot)
          .catch((err) => (crash ??= err))
          .finally(() => inFlight.delete(a.seq));
      };
      if (a.callAgent || a.approvalId || a.reviewId) start(false);
      else if (slots > 0) {
        slots--;
        start(true);
      } else {
        // Queued without a coroutine of its own until a slot passes to it.
        busy++;
        line.push(() => {
          busy--;
          start(true);
        });
      }
    }
    if (crash) throw crash;
    if (inFlight.size === 0) break;
    if (plan.stopOnFailure && failed > 0) break;
    const before = inFlight.size;
    await condition(() => crash !== undefined || (busy === 0 && inFlight.size < before));
  }
  return { failed };
}
