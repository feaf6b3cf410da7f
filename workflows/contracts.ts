// The messages and names by which code outside the sandbox (the API, services, activities, tests) talks to the
// workflows: signals, updates, queries, workflow ids and the workflows' input types. It imports no project module
// at run time (its one type import, from model/, is erased), so a caller takes the contract without loading any
// workflow code, and no import circle can pass through it. The workflows import their own contracts from here.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ReviewDecision } from '../model/review';

export interface AgentRunInput {
  runId: string;
  /** Pages already finished by earlier incarnations of this workflow (continue-as-new). */
  nextPage?: number;
  failedSoFar?: number;
}

export interface RunProgress {
  pages: number;
  pagesDone: number;
  failedItems: number;
}

export const progressQuery = defineQuery<RunProgress>('progress');

/**
 * Pause: steps under way finish, nothing new starts (no page, no item step, no set-based round). Resume: the run
 * goes on from there. Signals, not updates: a pause must land while every worker is down, and holds across their
 * restarts as an event of the history. The API stores the run's status and who asked.
 */
export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');

export function pageWorkflowId(runWorkflowId: string, page: number): string {
  return `${runWorkflowId}/page-${page}`;
}

export const batchWorkflowId = (batchId: string) => `delivery-batch-${batchId}`;

/** The batch reached its size: close it now rather than at the end of the window. */
export const batchFullSignal = defineSignal('batchFull');

export interface IndexSourceInput {
  versionId: string;
}

export interface IndexProgress {
  pagesTotal: number;
  pagesDone: number;
  stage: 'checking' | 'extracting' | 'embedding' | 'activating' | 'done' | 'failed';
}

export const indexProgressQuery = defineQuery<IndexProgress>('indexProgress');

export interface ApprovalDecision {
  approvalId: string;
  approve: boolean;
  /** Edited tool arguments ("approve with edits"). */
  arguments?: Record<string, unknown>;
  by: string;
  reason?: string;
}

/** A reviewer's decision; rejected (with a reason) when the approval is unknown here or already decided. */
export const decideUpdate = defineUpdate<void, [ApprovalDecision]>('decide');
/** The same decision as a fire-and-forget signal, for callers that need no answer. */
export const decideSignal = defineSignal<[ApprovalDecision]>('decide');
export const pendingApprovalsQuery = defineQuery<string[]>('pendingApprovals');

export interface ReviewInput {
  reviewId: string;
  decision: ReviewDecision;
  by: string;
}

/** A reviewer's decision on a flagged item; rejected when the review is not waiting here or already decided. */
export const reviewUpdate = defineUpdate<void, [ReviewInput]>('review');

/**
 * Whether the run is paused, as its run workflow tells its page children. `seq` orders the messages: two signals
 * the parent sends one after the other may arrive in either order, and only the later state counts.
 */
export interface HoldState {
  paused: boolean;
  seq: number;
}
export const holdSignal = defineSignal<[HoldState]>('hold');

/** The run workflow's signature, for a workflow that starts a run as a child by type name (chained agents). */
export type AgentRunWorkflow = (input: AgentRunInput) => Promise<string>;
