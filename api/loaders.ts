// Loading what a route's path names, within the caller's workspace: another workspace's record is simply not
// found (404), never revealed.
import type { Knex } from 'knex';
import { getAgent, type AgentRow } from '../db/agents';
import { ApiError } from './problem';

export async function loadAgent(knex: Knex, workspaceId: string, id: string): Promise<AgentRow> {
  const agent = await getAgent(knex, workspaceId, id);
  if (!agent) throw agentNotFound(id);
  return agent;
}

/** The answer about an agent that is not (or no longer) in the workspace. */
export const agentNotFound = (id: string) => new ApiError(404, 'agent_not_found', `no agent ${id} in this workspace`);
