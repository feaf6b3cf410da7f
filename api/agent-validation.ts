import { isToolName } from '../activities/tools/definitions';
import { agentSpecSchema, type AgentSpec } from '../workflows/agent-model';
import { ApiError } from './problem';
import { parseBody } from './validation';

/** Checks what the schema cannot: tools that exist, agents that exist, capabilities not yet available. */
export function validateAgentSpec(body: unknown): AgentSpec {
  const spec = parseBody(agentSpecSchema, body);
  for (const node of spec.nodes) {
    if (node.kind === 'retrieve') {
      throw new ApiError(
        422,
        'retrieve_unavailable',
        `node "${node.id}": retrieve nodes search an agent's sources, and sources are not available in this version of Cadre yet`,
      );
    }
    for (const tool of node.kind === 'tool' ? [node.tool] : node.kind === 'llm' ? node.tools : []) {
      if (!isToolName(tool))
        throw new ApiError(422, 'unknown_tool', `node "${node.id}" uses the tool "${tool}", which does not exist`);
    }
    if (node.kind === 'call_agent') {
      throw new ApiError(
        422,
        'call_agent_unavailable',
        `node "${node.id}": calling another agent is not available in this version of Cadre yet`,
      );
    }
  }
  return spec;
}
