// The tools a step may call behind one shape, whether built in (model/tools.ts with activities/tools/handlers.ts) or
// offered by a connected MCP server (`mcp.<connection>.<tool>`): the name the agent uses, what the model is told, how
// arguments are checked, and the call. Tool nodes and model steps both go through it, so approval policy, the effects
// ledger and error handling treat every tool alike.
import { Ajv } from 'ajv';
import { z } from 'zod';
import { ApplicationFailure } from '@temporalio/common';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { connectionTools, isToolName, parseConnectionToolName, toolDefinitions } from '../../model/tools';
import { externalToolHandlers } from './handlers';
import type { ToolContext } from './tool-context';
import { mcpClientResolver, openApiResolver } from '../connectors/connections';
import { listMcpTools, type McpSession } from '../connectors/mcp/client';
import { mcpSdk } from '../connectors/mcp/sdk';
import { readOnlyMessage, sqlConnectionWrites, sqlWriteTools } from '../connectors/sql/writes';
import { openApiBaseUrl, openApiOperations } from '../../model/openapi-document';
import { callOpenApiOperation } from '../connectors/openapi/call';
import { oauthFetch } from '../connectors/oauth/tokens';
import type { ActivityDeps } from '../deps';
import { publicFetch } from './ssrf-guard';
import { ArgumentTypeError, coerceArguments } from './coerce-arguments';
import { connectorCalls, connectorErrors } from '../../services/telemetry/metrics';

export type JsonSchemaObject = { type: 'object'; properties?: Record<string, unknown>; [k: string]: unknown };

export interface StepTool {
  /** As the agent names it: `http.request`, `mcp.crm.create_contact`. */
  name: string;
  description: string;
  /** The input as the model sees it. */
  inputSchema: JsonSchemaObject;
  /** Checks (and completes with defaults) the arguments; throws a message for the model or the item. */
  parse(input: unknown): Record<string, unknown>;
  /** Absent for tools only a tool node runs (the state store's). */
  call?: (input: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>;
}

const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true });
const mcpToolLists = new WeakMap<McpClient, Promise<McpTool[]>>();

/** The tools a client's server offers, asked once per client (a reopened session asks again). */
function toolsOf(client: McpClient): Promise<McpTool[]> {
  let listed = mcpToolLists.get(client);
  if (!listed) {
    listed = listMcpTools(client);
    mcpToolLists.set(client, listed);
    listed.catch(() => mcpToolLists.delete(client));
  }
  return listed;
}

/**
 * A built-in tool. A connection tool names the agent's connections as its only choices; a SQL tool that writes, only
 * those of them that allow writes (`writes`: whether each SQL connection does), and refuses a read-only one at once.
 */
function builtInTool(
  name: keyof typeof toolDefinitions,
  connections: readonly string[],
  writes?: ReadonlyMap<string, boolean>,
): StepTool {
  const def = toolDefinitions[name];
  const inputSchema = z.toJSONSchema(def.input, { io: 'input' }) as JsonSchemaObject & {
    properties: Record<string, Record<string, unknown>>;
  };
  const usable = writes ? connections.filter((c) => writes.get(c) === true) : connections;
  if (connectionTools.has(name))
    inputSchema.properties.connection = { ...inputSchema.properties.connection, enum: [...usable] };
  const handler = externalToolHandlers[name] as ((i: unknown, c: ToolContext) => Promise<unknown>) | undefined;
  return {
    name,
    description: def.description,
    inputSchema,
    parse: (input) => {
      const args = def.input.parse(input) as Record<string, unknown>;
      const connection = String(args.connection);
      if (writes?.get(connection) === false)
        throw ApplicationFailure.nonRetryable(readOnlyMessage(connection), 'SqlReadOnly');
      return args;
    },
    call: handler && ((input, ctx) => handler(input, ctx)),
  };
}

/**
 * Checks arguments against a connection tool's JSON Schema (filling in its defaults), naming what does not fit. A
 * value given as text that plainly renders the type the schema asks for ("7" for an integer: a CSV column, a
 * template) is read as that type first (./coerce-arguments.ts). Arguments that do not fit fail at once: asking again
 * with the same arguments changes nothing.
 */
function schemaParser(name: string, schema: object): StepTool['parse'] {
  const validate = ajv.compile(schema);
  return (input) => {
    let args: Record<string, unknown>;
    try {
      args = coerceArguments(structuredClone((input ?? {}) as Record<string, unknown>), schema);
    } catch (err) {
      if (!(err instanceof ArgumentTypeError)) throw err;
      throw ApplicationFailure.nonRetryable(`${name}: ${err.message}`, 'InvalidArguments');
    }
    if (!validate(args))
      throw ApplicationFailure.nonRetryable(
        `arguments of ${name} do not match its schema: ${ajv.errorsText(validate.errors)}`,
        'InvalidArguments',
      );
    return args;
  };
}

/** An MCP tool's answer as a step result: its structured content, else its text, else its content blocks. */
function resultOf(result: Awaited<ReturnType<McpClient['callTool']>>): unknown {
  if (result.structuredContent) return result.structuredContent;
  const content = (result.content ?? []) as { type: string; text?: string }[];
  if (content.every((c) => c.type === 'text')) return { text: content.map((c) => c.text).join('\n') };
  return { content };
}

function mcpTool(connection: string, tool: McpTool, session: McpSession): StepTool {
  const name = `mcp.${connection}.${tool.name}`;
  return {
    name,
    description: tool.description ?? tool.title ?? tool.name,
    inputSchema: tool.inputSchema as JsonSchemaObject,
    parse: schemaParser(name, tool.inputSchema),
    async call(input, ctx) {
      let result;
      try {
        // The protocol has no idempotency header: the key travels in the request's _meta for servers that honour it.
        result = await session.use((client) =>
          client.callTool({
            name: tool.name,
            arguments: input,
            _meta: { 'cadre/idempotency-key': ctx.idempotencyKey },
          }),
        );
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        const { ErrorCode, McpError } = await mcpSdk();
        // The server refused the request itself (unknown tool, bad arguments): asking again changes nothing. A
        // connection that closed again, or a request that timed out, is no refusal.
        const passing = [ErrorCode.ConnectionClosed, ErrorCode.RequestTimeout].map(Number);
        if (err instanceof McpError && !passing.includes(err.code))
          throw ApplicationFailure.nonRetryable(`${name}: ${reason}`, 'McpToolRefused');
        throw ApplicationFailure.retryable(`${name}: the MCP server did not answer: ${reason}`, 'McpUnreachable');
      }
      if (result.isError)
        throw ApplicationFailure.nonRetryable(`${name} failed: ${JSON.stringify(resultOf(result))}`, 'McpToolError');
      return resultOf(result);
    },
  };
}

/** A REST API connection's operations as tools (`api.<connection>.<operationId>`), or the one `only` names. */
async function apiTools(
  deps: ActivityDeps,
  run: { runId: string; connections: readonly string[] },
  connection: string,
  only: string | undefined,
): Promise<StepTool[]> {
  const { config, credentials } = await openApiResolver(deps, run)(connection);
  const operations = openApiOperations(config.document!, config.operations);
  const chosen = only === undefined ? operations : operations.filter((op) => op.id === only);
  if (only !== undefined && chosen.length === 0)
    throw ApplicationFailure.nonRetryable(
      `the API of connection "${connection}" has no operation "${only}" (it offers ${operations.map((op) => op.id).join(', ')})`,
      'UnknownTool',
    );
  const { auth } = config;
  const { allowHosts } = deps.config.http;
  const target = {
    connection,
    baseUrl: openApiBaseUrl(config),
    auth,
    credentials,
    // The OAuth account it names acts for it: this connection's own use is what lets the run use that one.
    send:
      auth.type === 'oauth2'
        ? oauthFetch(
            deps,
            { runId: run.runId, connections: [auth.connection] },
            auth.connection,
            publicFetch(allowHosts),
          )
        : publicFetch(allowHosts),
  };
  return chosen.map((op) => {
    const name = `api.${connection}.${op.id}`;
    return {
      name,
      description: op.description,
      inputSchema: op.inputSchema,
      parse: schemaParser(name, op.inputSchema),
      call: (input, ctx) => callOpenApiOperation(op, input, { ...target, tool: name }, ctx.idempotencyKey),
    };
  });
}

/** The tools `names` stand for (an `mcp.<connection>` or `api.<connection>` name stands for all of its tools). */
export async function resolveTools(
  names: readonly string[],
  deps: ActivityDeps,
  run: { runId: string; connections: readonly string[] },
  /** For a model: a SQL tool that writes is left out when none of the agent's connections allows writes. */
  { forModel = false }: { forModel?: boolean } = {},
): Promise<StepTool[]> {
  const mcpClient = mcpClientResolver(deps, run);
  const out: StepTool[] = [];
  let writes: Map<string, boolean> | undefined;
  for (const name of names) {
    if (isToolName(name)) {
      if (!sqlWriteTools.has(name)) {
        out.push(builtInTool(name, run.connections));
        continue;
      }
      writes ??= await sqlConnectionWrites(deps.knex, { runId: run.runId }, run.connections);
      if (forModel && ![...writes.values()].includes(true)) continue;
      out.push(builtInTool(name, run.connections, writes));
      continue;
    }
    const mcp = parseConnectionToolName(name);
    if (!mcp) throw ApplicationFailure.nonRetryable(`unknown tool "${name}"`, 'UnknownTool');
    if (mcp.family === 'api') {
      out.push(...(await apiTools(deps, run, mcp.connection, mcp.tool)));
      continue;
    }
    const session = await mcpClient(mcp.connection);
    const offered = await session.use(toolsOf);
    const chosen = mcp.tool === undefined ? offered : offered.filter((t) => t.name === mcp.tool);
    if (mcp.tool !== undefined && chosen.length === 0)
      throw ApplicationFailure.nonRetryable(
        `the MCP server of connection "${mcp.connection}" has no tool "${mcp.tool}" (it offers ${offered.map((t) => t.name).join(', ') || 'none'})`,
        'UnknownTool',
      );
    out.push(...chosen.map((t) => mcpTool(mcp.connection, t, session)));
  }
  return out.map(countedCalls);
}

/**
 * Counts the tool's calls and failures by kind: a built-in tool's family (`http`, `sql`, `slack`, …) or `mcp` /
 * `api` for a connection's tools, never the connection's or the tool's own name (a tenant chooses those).
 */
function countedCalls(tool: StepTool): StepTool {
  const { call } = tool;
  if (!call) return tool;
  const kind = tool.name.split('.')[0];
  return {
    ...tool,
    call: async (input, ctx) => {
      connectorCalls.inc({ kind });
      try {
        return await call(input, ctx);
      } catch (err) {
        connectorErrors.inc({ kind });
        throw err;
      }
    },
  };
}
