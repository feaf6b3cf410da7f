// A Model Context Protocol client for an MCP connection (@modelcontextprotocol/sdk): over streamable HTTP, or over
// stdio to a server the operator declares (./stdio.ts starts it). Kept per connection version like the SQL pools: a
// changed connection gets a new client, an idle one is closed (and its stdio process ends).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpCredentials, StoredMcpConfig } from '../../../model/connection';
import { publicFetch } from '../../tools/ssrf-guard';
import { McpStdioSetupError, ServerProcessTransport, type McpStdio } from './stdio';

export interface McpLimits {
  /** Hosts reachable although private or internal (CADRE_HTTP_ALLOW_HOSTS). */
  allowHosts: readonly string[];
  /** The stdio servers the operator declares (CADRE_MCP_STDIO_SERVERS) and how they run; unset → none. */
  mcpStdio?: McpStdio;
}

export class McpSetupError extends Error {}

const clientInfo = { name: 'cadre', version: '0.1.0' };
const idleCloseMs = 5 * 60_000;
const clients = new Map<string, { client: Promise<Client>; timer: NodeJS.Timeout }>();

/** Connects and initializes; an unreachable server, an undeclared one or a failed handshake throws. */
export async function connectMcp(
  config: StoredMcpConfig,
  credentials: McpCredentials,
  limits: McpLimits,
): Promise<Client> {
  const client = new Client(clientInfo);
  if (config.transport === 'http') {
    // Every request, and every redirect, to a checked address: the stored headers go nowhere else.
    await client.connect(
      new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: credentials.headers },
        fetch: publicFetch(limits.allowHosts),
      }),
    );
  } else {
    await connectStdio(client, config, limits.mcpStdio);
  }
  return client;
}

/** Starts the declared server a stdio connection names, and initializes; its start-up errors come with its stderr. */
async function connectStdio(
  client: Client,
  config: Extract<StoredMcpConfig, { transport: 'stdio' }>,
  stdio: McpStdio | undefined,
): Promise<void> {
  const declared = Object.keys(stdio?.stdioServers ?? {});
  const offer = declared.length
    ? `pick one of the servers the operator declares (${declared.map((n) => `"${n}"`).join(', ')})`
    : 'the operator declares none (CADRE_MCP_STDIO_SERVERS), so connect over HTTP instead';
  if (!('server' in config))
    throw new McpSetupError(
      `this connection names a command ("${config.command}"), which connections may no longer choose: edit it and ${offer}`,
    );
  if (!stdio || !Object.hasOwn(stdio.stdioServers, config.server))
    throw new McpSetupError(`there is no stdio MCP server "${config.server}" on this deployment: ${offer}`);
  let transport: ServerProcessTransport;
  try {
    transport = await ServerProcessTransport.forServer(config.server, stdio);
  } catch (err) {
    if (err instanceof McpStdioSetupError) throw new McpSetupError(err.message);
    throw err;
  }
  try {
    await client.connect(transport);
  } catch (err) {
    const shown = await transport.startError(err);
    await transport.close();
    throw shown;
  }
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
