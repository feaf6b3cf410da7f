// How a run is named in Temporal: its workflow id and the search attributes visibility finds it by. Shared by
// every path that starts a run workflow (API, schedules, chains), so all of them look the same.
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

export const runWorkflowId = (runId: string) => `run-${runId}`;

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
