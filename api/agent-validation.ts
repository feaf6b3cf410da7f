import type { Knex } from 'knex';
import { agentSpecSchema, type AgentSpec } from '../model/agent';
import { AgentSpecError, checkAgentSpec } from '../model/agent-checks';
import { ApiError } from './problem';
import { parseBody } from './validation';

/** The spec of an API request: 422 `invalid_body` naming each schema problem, or the check that failed. */
export function validateAgentSpec(body: unknown): AgentSpec {
  const spec = parseBody(agentSpecSchema, body);
  try {
    return checkAgentSpec(spec);
  } catch (err) {
    if (err instanceof AgentSpecError) throw new ApiError(422, err.code, err.message);
    throw err;
  }
}

/**
 * The agents a spec calls (call_agent nodes) must be agents of the workspace, and no agent may end up calling
 * itself through others: that would start runs without end. 422 names the node or the loop.
 */
export async function checkAgentCalls(knex: Knex, workspaceId: string, spec: AgentSpec, selfId?: string) {
  const calls = spec.nodes.filter((n) => n.kind === 'call_agent');
  if (calls.length === 0) return;
  const agents: { id: string; name: string; spec: AgentSpec }[] = await knex('agents')
    .join('agent_versions', function () {
      this.on('agent_versions.agent_id', 'agents.id').andOn('agent_versions.version', 'agents.current_version');
    })
    .where('agents.workspace_id', workspaceId)
    .select('agents.id', 'agents.name', 'agent_versions.spec');
  const byId = new Map(agents.map((a) => [a.id, a]));
  for (const node of calls) {
    if (!byId.has(node.agent_id) && node.agent_id !== selfId)
      throw new ApiError(
        422,
        'called_agent_not_found',
        `node "${node.id}" calls agent ${node.agent_id}, which is not in this workspace`,
      );
  }
  if (!selfId) return; // a new agent: nothing calls it yet, so it closes no loop
  const callees = (s: AgentSpec | undefined) =>
    (s?.nodes ?? []).flatMap((n) => (n.kind === 'call_agent' ? [n.agent_id] : []));
  // Depth-first from this agent, with its new spec, looking for a way back to it.
  const walk = (id: string, path: string[]): string[] | undefined => {
    for (const next of callees(id === selfId ? spec : byId.get(id)?.spec)) {
      if (next === selfId) return [...path, next];
      if (path.includes(next)) continue;
      const found = walk(next, [...path, next]);
      if (found) return found;
    }
    return undefined;
  };
  const loop = walk(selfId, [selfId]);
  if (loop) {
    const names = loop.map((id) => (id === selfId ? spec.name : (byId.get(id)?.name ?? id)));
    throw new ApiError(
      422,
      'call_cycle',
      `these agents would call each other without end: ${names.join(' → ')}`,
      {},
      { cycle: loop },
    );
  }
}
