import { isToolName } from '../activities/tools/definitions';
import { agentSpecSchema, type AgentSpec } from '../workflows/agent-model';
import { ApiError } from './problem';
import { parseBody } from './validation';

/** Checks what the schema cannot: tools that exist, sources a retrieve node may search, capabilities not yet available. */
export function validateAgentSpec(body: unknown): AgentSpec {
  const spec = parseBody(agentSpecSchema, body);
  for (const node of spec.nodes) {
    if (node.kind === 'retrieve') {
      if (spec.sources.length === 0) {
        throw new ApiError(
          422,
          'retrieve_without_sources',
          `node "${node.id}" searches the agent's sources, but the agent has none: list source names in "sources"`,
        );
      }
      const outside = node.sources.filter((name) => !spec.sources.includes(name));
      if (outside.length > 0) {
        throw new ApiError(
          422,
          'retrieve_source_not_attached',
          `node "${node.id}" searches ${outside.map((n) => `"${n}"`).join(', ')}, which the agent's "sources" do not list`,
        );
      }
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
