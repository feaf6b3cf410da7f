// Creating an agent: the one path of the agents API (create, import, duplicate) and the creation wizard.
import type { Knex } from 'knex';
import { AgentLimitError, createAgent } from '../db/agents';
import { recordEvent } from '../db/timeline';
import type { Workspace } from '../db/workspaces';
import type { AgentSpec } from '../model/agent';
import { planLimits } from '../model/plan';
import { ApiError } from './problem';

/** Creates a Draft agent from a checked spec within the plan's agent allowance, and tells its timeline who did. */
export async function createAgentWithinPlan(knex: Knex, ws: Workspace, spec: AgentSpec, by: string) {
  const limit = planLimits[ws.plan].agents;
  const agent = await createAgent(knex, ws.id, spec, limit).catch((err) => {
    if (!(err instanceof AgentLimitError)) throw err;
    throw new ApiError(
      403,
      'plan_agent_limit',
      `the ${ws.plan} plan allows ${limit} agents; delete one or upgrade the plan`,
    );
  });
  await recordEvent(knex, {
    workspace_id: ws.id,
    agent_id: agent.id,
    kind: 'agent_created',
    message: `agent created (version 1) ${by}`,
  });
  return agent;
}
