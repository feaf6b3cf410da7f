// What an item step reports to its page workflow, and a reviewer's decision on a tool call as the step applies
// it: types shared by the step activities (item-steps.ts, llm-step.ts, approvals.ts) and the workflow that
// proxies them, kept apart so those modules need not import one another for them.
export interface Decision {
  approved: boolean;
  arguments?: Record<string, unknown>;
  by: string;
  reason?: string;
}

export type StepOutcome = 'advanced' | 'failed' | 'skipped' | 'already_done';
/** A step settles, or (a model step) waits on these approvals and then runs again with their decisions. */
export type StepResult = StepOutcome | { awaiting: string[] };
