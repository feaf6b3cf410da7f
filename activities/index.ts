// activities/ (DESIGN.md "Top-level layout"): everything with side effects that a workflow schedules, as
// factories taking their dependencies, all gathered here for the worker: model and tool calls, connectors,
// sources and retrieval, run persistence. Thin adapters: decisions belong to model/ or services/. They import
// model/, db/, services/ and from workflows/ only contracts.ts; never api/. The web process uses some of them too
// (connection checks, OAuth providers, retrieval, page pictures, mail), handed to the API by scripts/api-adapters.ts.
import type { ActivityDeps } from './deps';
import { withHeartbeats } from './heartbeat';
import { createApprovalActivities } from './approvals';
import { createReviewActivities } from './reviews';
import { createItemStepActivities } from './item-steps';
import { createPageAdvanceActivities } from './page-advance';
import { createRunLifecycleActivities } from './run-lifecycle';
import { createRunPhaseActivities } from './run-phases';
import { createTriggerActivities } from './triggers';
import { createEventTriggerActivities } from './event-triggers';
import { createMailboxWatchActivities } from './mailbox-watch';
import { createAgentCallActivities } from './agent-calls';
import { createFailureNoticeActivities } from './failure-notice';
import { createSourceIndexingActivities } from './sources/indexing';
import { createAccountErasureActivities } from './account-erasure';
import { createPlanChangeActivities } from './plan-change';

export type { ActivityDeps } from './deps';

export function createActivities(deps: ActivityDeps) {
  return withHeartbeats({
    ...createRunLifecycleActivities(deps),
    ...createRunPhaseActivities(deps),
    ...createPageAdvanceActivities(deps),
    ...createItemStepActivities(deps),
    ...createApprovalActivities(deps),
    ...createReviewActivities(deps),
    ...createTriggerActivities(deps),
    ...createEventTriggerActivities(deps),
    ...createMailboxWatchActivities(deps),
    ...createAgentCallActivities(deps),
    ...createFailureNoticeActivities(deps),
    ...createSourceIndexingActivities(deps),
    ...createAccountErasureActivities(deps),
    ...createPlanChangeActivities(deps),
  });
}

export type Activities = ReturnType<typeof createActivities>;
