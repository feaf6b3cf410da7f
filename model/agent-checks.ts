// What an agent spec must satisfy beyond its schema: tools that exist, sources a retrieve node may search,
// connections a tool node may act through, SQL that takes item values as parameters. Pure, so the API (which
// answers 422), the seeds and the CLI check a spec the same way.
import { agentSpecSchema, type AgentSpec } from './agent';
import { connectionTools, isToolName, parseConnectionToolName } from './tools';

export class AgentSpecError extends Error {
  constructor(
    readonly code:
      | 'retrieve_without_sources'
      | 'retrieve_source_not_attached'
      | 'unknown_tool'
      | 'connection_not_listed'
      | 'sql_placeholder',
    message: string,
  ) {
    super(message);
  }
}

/** Throws AgentSpecError naming the first node that breaks a rule. */
export function checkAgentSpec(spec: AgentSpec): AgentSpec {
  for (const node of spec.nodes) {
    if (node.kind === 'retrieve') {
      if (spec.sources.length === 0) {
        throw new AgentSpecError(
          'retrieve_without_sources',
          `node "${node.id}" searches the agent's sources, but the agent has none: list source names in "sources"`,
        );
      }
      const outside = node.sources.filter((name) => !spec.sources.includes(name));
      if (outside.length > 0) {
        throw new AgentSpecError(
          'retrieve_source_not_attached',
          `node "${node.id}" searches ${outside.map((n) => `"${n}"`).join(', ')}, which the agent's "sources" do not list`,
        );
      }
    }
    for (const tool of node.kind === 'tool' ? [node.tool] : node.kind === 'llm' ? node.tools : []) {
      if (isToolName(tool)) continue;
      // A connection's own tools exist once it is connected: what can be checked here is the connection's name.
      const named = parseConnectionToolName(tool);
      if (!named)
        throw new AgentSpecError('unknown_tool', `node "${node.id}" uses the tool "${tool}", which does not exist`);
      if (!spec.connections.includes(named.connection))
        throw new AgentSpecError(
          'connection_not_listed',
          `node "${node.id}" uses "${tool}" of the connection "${named.connection}", which the agent's "connections" do not list`,
        );
      if (node.kind === 'tool' && named.tool === undefined)
        throw new AgentSpecError(
          'unknown_tool',
          `tool node "${node.id}" must name one tool of the connection: "${named.family}.${named.connection}.<tool>"`,
        );
    }
    // A tool node naming its connection outright must name one the agent lists (a template is checked at run time).
    const named = node.kind === 'tool' && connectionTools.has(node.tool) ? node.arguments.connection : undefined;
    if (typeof named === 'string' && !named.includes('{{') && !spec.connections.includes(named)) {
      throw new AgentSpecError(
        'connection_not_listed',
        `node "${node.id}" acts through the connection "${named}", which the agent's "connections" do not list`,
      );
    }
    // Item values pasted into SQL text would let an item's data rewrite the statement: they go in as parameters.
    const sql = node.kind === 'tool' && sqlTools.has(node.tool) ? node.arguments.sql : undefined;
    if (typeof sql === 'string' && sql.includes('{{')) {
      throw new AgentSpecError(
        'sql_placeholder',
        `node "${node.id}" puts {{…}} into its SQL: write ? in the statement and the values in "params" (for example "params": ["{{invoice}}"])`,
      );
    }
  }
  return spec;
}

/** Tools whose `sql` argument is a statement (the SQL databases', a warehouse's). */
const sqlTools = new Set(['sql.query', 'duckdb.query']);

/** A spec from a file (examples, an export): parsed and checked; throws the schema's or the checks' error. */
export function parseAgentSpec(json: unknown): AgentSpec {
  return checkAgentSpec(agentSpecSchema.parse(json));
}
