// Tool definitions are typed data, kept apart from the name → handler map (activities/tools/handlers.ts), so the API can
// validate agents and the engine can apply approval policy without loading any connector code.
import { z } from 'zod';
import { connectorTools } from './connectors';
import type { ToolDefinition } from './tool-definition';

const key = z.string().min(1).max(200);
/** A SQL connection the agent lists in its "connections", by name. */
const connection = z.string().min(1).max(60).describe('the name of a SQL connection the agent lists in "connections"');
const sqlIdentifier = z
  .string()
  .regex(/^[A-Za-z_][\w$]*(\.[A-Za-z_][\w$]*)?$/, 'a table name, optionally schema.table');
const sqlValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const builtInTools = {
  'state.get': {
    name: 'state.get',
    description: "Read a value from the agent's durable state store.",
    input: z.object({ key, default: z.unknown().optional() }),
    sideEffect: 'read',
    approvalDefault: 'never',
  },
  'state.set': {
    name: 'state.set',
    description: "Write a value to the agent's durable state store.",
    input: z.object({ key, value: z.unknown() }),
    sideEffect: 'state',
    approvalDefault: 'never',
  },
  'state.increment': {
    name: 'state.increment',
    description: 'Add a number to a counter in the state store and return the new total.',
    input: z.object({ key, by: z.coerce.number().default(1) }),
    sideEffect: 'state',
    approvalDefault: 'never',
  },
  'state.append': {
    name: 'state.append',
    description: 'Append a value to a list in the state store.',
    input: z.object({ key, value: z.unknown() }),
    sideEffect: 'state',
    approvalDefault: 'never',
  },
  'http.request': {
    name: 'http.request',
    description:
      'Call a JSON/REST endpoint. Private and internal addresses are refused unless allowed by configuration.',
    input: z.object({
      method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST'),
      url: z.string().url(),
      headers: z.record(z.string(), z.string()).default({}),
      body: z.unknown().optional(),
    }),
    sideEffect: 'external',
    approvalDefault: 'never',
  },
  'file.generate': {
    name: 'file.generate',
    description:
      'Write a file of the run that people can download: rows as a table (CSV, XLSX, JSON or Markdown), or text ' +
      'written as it is (a Markdown report, CSV or JSON). Give either rows or text.',
    input: z
      .object({
        file_name: z.string().regex(/^[\w.-]{1,120}$/, 'a plain file name'),
        format: z.enum(['csv', 'xlsx', 'json', 'markdown']).default('csv'),
        rows: z.array(z.record(z.string(), z.unknown())).min(1).max(100_000).optional(),
        /** Columns of the table, in order (rows only). */
        fields: z.array(z.string()).optional(),
        text: z.string().min(1).max(10_000_000).optional(),
      })
      .superRefine((input, ctx) => {
        if ((input.rows === undefined) === (input.text === undefined))
          ctx.addIssue({ code: 'custom', message: 'give either rows or text', path: ['rows'] });
        else if (input.text !== undefined && input.format === 'xlsx')
          ctx.addIssue({ code: 'custom', message: 'an xlsx file is made from rows, not text', path: ['text'] });
        else if (input.text !== undefined && input.format === 'json' && !isJson(input.text))
          ctx.addIssue({ code: 'custom', message: 'the text of a json file must be valid JSON', path: ['text'] });
      }),
    sideEffect: 'files',
    approvalDefault: 'never',
  },
  'sql.list_tables': {
    name: 'sql.list_tables',
    description: "List the tables of a SQL connection's database with their columns and types.",
    input: z.object({ connection }),
    sideEffect: 'read',
    approvalDefault: 'never',
  },
  'sql.query': {
    name: 'sql.query',
    description:
      'Run one read-only SQL statement (SELECT, WITH, VALUES, TABLE, SHOW or EXPLAIN) on a connection, with ? ' +
      "placeholders bound to params in order; answers the rows. A query answering more rows than the connection's " +
      'row limit fails: narrow it with WHERE, LIMIT or an aggregate.',
    input: z.object({
      connection,
      sql: z.string().min(1).max(100_000),
      params: z.array(sqlValue).max(1000).default([]),
    }),
    sideEffect: 'read',
    approvalDefault: 'never',
  },
  'sql.insert': {
    name: 'sql.insert',
    description: 'Insert rows (objects of column → value) into a table, on a connection that allows writes.',
    input: z.object({
      connection,
      table: sqlIdentifier,
      rows: z.array(z.record(z.string(), sqlValue)).min(1).max(1000),
    }),
    sideEffect: 'external',
    approvalDefault: 'always',
  },
  'sql.update': {
    name: 'sql.update',
    description:
      'Update the rows of a table whose columns equal every value in "where", setting the columns in "set", on a ' +
      'connection that allows writes.',
    input: z.object({
      connection,
      table: sqlIdentifier,
      set: z.record(z.string(), sqlValue).refine((o) => Object.keys(o).length > 0, 'set at least one column'),
      where: z
        .record(z.string(), sqlValue)
        .refine((o) => Object.keys(o).length > 0, 'an update needs a "where": it would change every row'),
    }),
    sideEffect: 'external',
    approvalDefault: 'always',
  },
  'email.reply': {
    name: 'email.reply',
    description:
      "Reply in an Inbox thread of the agent (the item's thread_id): sent from the agent's address (or from the " +
      "connected mailbox the thread's mail came through) to the thread's sender, as a reply to its last message.",
    input: z.object({
      thread_id: z.uuid('thread_id must be the id of an Inbox thread (the item\'s "thread_id")'),
      text: z.string().min(1, 'the reply has no text').max(1_000_000),
    }),
    sideEffect: 'external',
    approvalDefault: 'always',
  },
} satisfies Record<string, ToolDefinition>;

/** The built-in tools and every connector's (model/connectors/); `email.send` is the email connector's. */
export const toolDefinitions = { ...builtInTools, ...connectorTools };

export type ToolName = keyof typeof toolDefinitions;
export type ToolInput<N extends ToolName> = z.infer<(typeof toolDefinitions)[N]['input']>;

/** Tools that act through one of the agent's connections, named in their `connection` argument. */
export const connectionTools = new Set<string>([
  'sql.list_tables',
  'sql.query',
  'sql.insert',
  'sql.update',
  ...Object.keys(connectorTools),
]);

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(toolDefinitions, name);
}

/**
 * Tools a connection brings, named `<family>.<connection>.<tool>`: an MCP server's (`mcp.helpdesk.create_ticket`) or
 * the operations of a REST API imported from its OpenAPI document (`api.inventory.getItem`). An llm step may offer
 * all of a connection's tools at once as `<family>.<connection>`. Undefined for any other name.
 */
export const connectionToolFamilies = ['mcp', 'api'] as const;
export type ConnectionToolFamily = (typeof connectionToolFamilies)[number];
export function parseConnectionToolName(
  name: string,
): { family: ConnectionToolFamily; connection: string; tool?: string } | undefined {
  const m = /^(mcp|api)\.([a-z][a-z0-9_-]{0,59})(?:\.(.+))?$/.exec(name);
  return m ? { family: m[1] as ConnectionToolFamily, connection: m[2], tool: m[3] } : undefined;
}

/**
 * Whether a call of this tool asks a reviewer when the agent's policy names no rule for it. A connection's own tools
 * can do anything its system does, so they ask until the editor says otherwise (`"mcp.helpdesk.*": {"mode": "never"}`).
 */
export function approvalDefaultOf(tool: string, args?: unknown): 'always' | 'never' {
  if (isToolName(tool)) {
    const def = toolDefinitions[tool] as ToolDefinition;
    return def.approvalFor && args !== undefined ? def.approvalFor(args) : def.approvalDefault;
  }
  return parseConnectionToolName(tool) ? 'always' : 'never';
}
