// A warning (never a refusal: the spec allows it) when an agent is given the name of another agent of the workspace,
// letter case aside: two agents with one name are easy to mix up in runs, approvals and notifications.
import type { Knex } from 'knex';
import { otherAgentNamed } from '../db/agents';

export async function agentNameWarnings(
  knex: Knex,
  workspaceId: string,
  name: string,
  exceptAgentId?: string,
): Promise<string[]> {
  if (!(await otherAgentNamed(knex, workspaceId, name, exceptAgentId))) return [];
  return [`another agent is already named “${name}”; rename one so runs, approvals and notifications are not mixed up`];
}
