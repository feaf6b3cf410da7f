// A tool node's arguments when its tool changes in the editor: what the new tool takes is kept, what it requires is
// added blank for the person to fill in, and a tool acting through a connection gets one of the agent's.
import type { SpecNode } from '$lib/api-types';
import { shapeWords, type JsonSchema } from '$lib/workflow/argument-shapes';

export interface ToolEntry {
  name: string;
  input_schema: Record<string, unknown>;
}

interface ObjectSchema {
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

const blank: Record<string, unknown> = { string: '', array: [], object: {}, number: 0, integer: 0, boolean: false };

export const argumentNames = (tool: ToolEntry | undefined) =>
  Object.keys((tool?.input_schema as ObjectSchema | undefined)?.properties ?? {});

/**
 * What a tool takes, from its input schema: each argument's name, what it holds in words ("list of text", "names and
 * values"), its description and whether it must be given.
 */
export function describeArguments(tool: ToolEntry | undefined) {
  const schema = (tool?.input_schema ?? {}) as ObjectSchema;
  return Object.entries(schema.properties ?? {}).map(([name, p]) => ({
    name,
    holds: shapeWords(p),
    description: p.description ?? '',
    required: (schema.required ?? []).includes(name),
  }));
}

/** Tools of Cadre's own, listed together; the others come under their system: `sql`, `email`, `s3`, `slack`, .... */
const ownFamilies = new Set(['state', 'http', 'file']);

/** The group a tool is listed under: a connected MCP server (`mcp.<connection>`), a connector, or the built-in tools. */
export function toolGroupOf(name: string): string {
  const server = /^mcp\.[^.]+/.exec(name)?.[0];
  if (server) return server;
  const family = name.split('.')[0];
  return ownFamilies.has(family) ? 'built-in' : family;
}

/**
 * Of the agent's connections, those a tool can act through: its connector's kind (`s3.list` → s3 connections; the
 * sql.* tools → PostgreSQL and MySQL).
 */
export function connectionsFor(tool: string, agentConnections: string[], workspace: { name: string; kind: string }[]) {
  const family = tool.split('.')[0];
  const kinds = family === 'sql' ? ['postgres', 'mysql'] : [family];
  return agentConnections.filter((name) => kinds.includes(workspace.find((c) => c.name === name)?.kind ?? ''));
}

/** Whether the tool acts through one of the agent's connections (its `connection` argument). */
export const usesConnection = (tool: ToolEntry | undefined) => argumentNames(tool).includes('connection');

export function withTool(node: SpecNode, tool: ToolEntry, connections: string[]): SpecNode {
  const schema = tool.input_schema as ObjectSchema;
  const given = (node.arguments ?? {}) as Record<string, unknown>;
  const names = argumentNames(tool);
  const args = Object.fromEntries(Object.entries(given).filter(([k]) => names.includes(k)));
  for (const name of schema.required ?? []) {
    const type = [schema.properties?.[name]?.type ?? 'string'].flat()[0];
    if (!(name in args)) args[name] = structuredClone(blank[type] ?? '');
  }
  if (names.includes('connection') && !args.connection && connections.length > 0) args.connection = connections[0];
  return { ...node, tool: tool.name, arguments: args };
}

interface CatalogueTool extends ToolEntry {
  description: string;
  side_effect: string;
  approval_default: string;
}

/**
 * The tools whose approval an agent's editor sets: Cadre's own, those of the connectors the agent has connections
 * of, and the tools of its MCP servers (which ask by default: they can do anything their system does).
 */
export function policyTools(
  catalogue: CatalogueTool[],
  serverTools: (ToolEntry & { description: string })[],
  agentConnections: string[],
  workspace: { name: string; kind: string }[],
): CatalogueTool[] {
  const needsConnection = (t: ToolEntry) =>
    ((t.input_schema as ObjectSchema | undefined)?.required ?? []).includes('connection');
  return [
    ...catalogue.filter((t) => !needsConnection(t) || connectionsFor(t.name, agentConnections, workspace).length > 0),
    ...serverTools.map((t) => ({ ...t, side_effect: 'external', approval_default: 'always' })),
  ];
}
