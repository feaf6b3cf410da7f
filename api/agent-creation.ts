// Creating an agent: the one path of the agents API (create, import, duplicate) and the creation wizard.
import type { Knex } from 'knex';
import { AgentLimitError, createAgent } from '../db/agents';
import { recordEvent } from '../db/timeline';
import type { Workspace } from '../db/workspaces';
import type { AgentSpec } from '../model/agent';
import { planLimits } from '../model/plan';
import { ApiError } from './problem';

/**
 * Creates a Draft agent from a checked spec within the plan's agent allowance. `actor` (a person's email or an API
 * key's name) is recorded as who saved version 1, as every later save records its author, and the timeline says
 * who created it and `how` (", duplicated from …").
 */
export async function createAgentWithinPlan(knex: Knex, ws: Workspace, spec: AgentSpec, actor: string, how = '') {
  const limit = planLimits[ws.plan].agents;
  const agent = await createAgent(knex, ws.id, spec, { limit, savedBy: actor }).catch((err) => {
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
    message: `agent created (version 1) by ${actor}${how}`,
  });
  return agent;
}
