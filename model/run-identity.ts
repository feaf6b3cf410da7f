// How a run is named in Temporal: its workflow id, the search attributes visibility finds it by, and its fairness
// key. Shared by every path that starts a run workflow (API, schedules, chains, agent calls), so all of them look
// the same.
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type Priority,
  type SearchAttributePair,
} from '@temporalio/common';

export const runWorkflowId = (runId: string) => `run-${runId}`;

/**
 * The workflow type every new run starts as, whichever door opened it (services/runs/start.ts): the web's dispatch,
 * and the workflows that start runs as their children (schedules, batches, event polls, chains, agent calls). Older
 * types (agentRun, agentRunV2) stay registered for the histories of runs they started.
 */
export const currentRunType = 'agentRunV3';

/**
 * Asked by a workflow that used to start its run children as agentRun, before it starts one: its histories recorded
 * before the change replay starting agentRun (test/fixtures/histories/run-starts-before-current-type.json).
 */
export const currentRunTypePatch = 'runs-start-current-type';

export const workspaceKey = defineSearchAttributeKey('CadreWorkspaceId', SearchAttributeType.KEYWORD);
export const agentKey = defineSearchAttributeKey('CadreAgentId', SearchAttributeType.KEYWORD);
export const triggerKey = defineSearchAttributeKey('CadreTrigger', SearchAttributeType.KEYWORD);

export function runSearchAttributes(run: {
  workspace_id: string;
  agent_id: string;
  trigger: string;
}): SearchAttributePair[] {
  return [
    { key: workspaceKey, value: run.workspace_id },
    { key: agentKey, value: run.agent_id },
    { key: triggerKey, value: run.trigger },
  ];
}

/**
 * The agent is the run's fairness key: with `matching.enableFairness` on the server, Temporal dispatches the
 * backlogged tasks of different keys in turn, so a burst of one agent's runs (10,000 webhook calls) does not make
 * every other agent's runs, in this workspace or another, wait behind it. Children and activities inherit it.
 */
export const runPriority = (run: { agent_id: string }): Priority => ({ fairnessKey: run.agent_id });

/** The options every start of a run workflow carries. */
export function runWorkflowOptions(run: { id: string; workspace_id: string; agent_id: string; trigger: string }) {
  return {
    workflowId: runWorkflowId(run.id),
    args: [{ runId: run.id }] as [{ runId: string }],
    typedSearchAttributes: runSearchAttributes(run),
    priority: runPriority(run),
  };
}
