// A Model Context Protocol client for an MCP connection (@modelcontextprotocol/sdk): over streamable HTTP, or over
// stdio to a command the operator allows. Kept per connection version like the SQL pools: a changed connection gets a
// new client, an idle one is closed (and its stdio process ends).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpConfig, McpCredentials } from '../../../model/connection';
import { assertPublicUrl } from '../../tools/ssrf-guard';

export interface McpLimits {
  /** Hosts reachable although private or internal (CADRE_HTTP_ALLOW_HOSTS). */
  allowHosts: readonly string[];
  /** Commands a stdio connection may start (CADRE_MCP_STDIO_COMMANDS). */
  stdioCommands: readonly string[];
}

export class McpSetupError extends Error {}

const clientInfo = { name: 'cadre', version: '0.1.0' };
const idleCloseMs = 5 * 60_000;
const clients = new Map<string, { client: Promise<Client>; timer: NodeJS.Timeout }>();

/** Connects and initializes; an unreachable server, a refused command or a failed handshake throws. */
export async function connectMcp(config: McpConfig, credentials: McpCredentials, limits: McpLimits): Promise<Client> {
  const client = new Client(clientInfo);
  if (config.transport === 'http') {
    await assertPublicUrl(new URL(config.url), limits.allowHosts);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: credentials.headers } }),
    );
  } else {
    if (!limits.stdioCommands.includes(config.command))
      throw new McpSetupError(
        `"${config.command}" may not be started on this deployment: the operator allows stdio MCP commands with CADRE_MCP_STDIO_COMMANDS`,
      );
    // Only PATH from the worker's environment: the worker's own secrets stay out of a connected server's process.
    await client.connect(
      new StdioClientTransport({
        command: config.command,
        args: config.args,
        env: { PATH: process.env.PATH ?? '' },
        stderr: 'ignore',
      }),
    );
  }
  return client;
}

/** The client of this version of the connection (`key` changes when the connection does). */
export function mcpClientFor(key: string, connect: () => Promise<Client>): Promise<Client> {
  const cached = clients.get(key);
  const client =
    cached?.client ??
    connect().catch((err: unknown) => {
      clients.delete(key); // the next call tries again
      throw err;
    });
  if (cached) clearTimeout(cached.timer);
  const timer = setTimeout(() => {
    clients.delete(key);
    void client.then((c) => c.close()).catch(() => {});
  }, idleCloseMs);
  timer.unref();
  clients.set(key, { client, timer });
  return client;
}

/** Every tool the server offers, through all its pages. */
export async function listMcpTools(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}
