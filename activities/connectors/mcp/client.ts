// A Model Context Protocol client for an MCP connection (@modelcontextprotocol/sdk): over streamable HTTP, or over
// stdio to a server the operator declares (./stdio.ts starts it). Kept per connection version like the SQL pools: a
// changed connection gets a new client, an idle one is closed (and its stdio process ends). A session the server no
// longer knows (it restarted) or a transport that closed (the stdio server exited) is opened again once, and the call
// made again: a server that restarts does not break every later run until the worker restarts.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpCredentials, McpLimits, McpStdio, StoredMcpConfig } from '../../../model/connection';
import { publicFetch } from '../../tools/ssrf-guard';
import { mcpSdk, type McpSdk } from './sdk';
import { McpStdioSetupError, ServerProcessTransport } from './stdio';

export class McpSetupError extends Error {}

const clientInfo = { name: 'cadre', version: '0.1.0' };
const idleCloseMs = 5 * 60_000;
const connections = new Map<string, { connection: McpConnection; timer: NodeJS.Timeout }>();
/** The stdio transport of a client, to say how its server ended. */
const stdioTransports = new WeakMap<Client, ServerProcessTransport>();

/** Connects and initializes; an unreachable server, an undeclared one or a failed handshake throws. */
export async function connectMcp(
  config: StoredMcpConfig,
  credentials: McpCredentials,
  limits: McpLimits,
): Promise<Client> {
  const { Client, StreamableHTTPClientTransport } = await mcpSdk();
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
  stdioTransports.set(client, transport);
}

/** How long a client must have lived for its loss to count as a new fault, not the same one again. */
const stableMs = 60_000;
const firstBackoffMs = 1000;
const maxBackoffMs = 15_000;

/**
 * Why a call that failed with `err` on `client` is worth making again on a new session, or undefined: the server
 * answered 404 or 400 to the session the client holds (it restarted and forgot it; 404 is the protocol's answer, the
 * SDK's examples answer 400 "No valid session ID provided"), or the transport closed (a stdio server that exited).
 */
function lostSession(err: unknown, client: Client, sdk: McpSdk): string | undefined {
  const { ErrorCode, McpError, StreamableHTTPClientTransport, StreamableHTTPError } = sdk;
  const transport = client.transport;
  if (
    err instanceof StreamableHTTPError &&
    (err.code === 404 || err.code === 400) &&
    transport instanceof StreamableHTTPClientTransport &&
    transport.sessionId
  )
    return `the MCP server no longer knew the session (HTTP ${err.code}): it restarted`;
  if (closed(client) || (err instanceof McpError && err.code === Number(ErrorCode.ConnectionClosed)))
    return closedWhy(client);
  return undefined;
}

/** Whether the client's transport closed, or its server process exited (its pipes may not have closed yet). */
const closed = (client: Client) => !client.transport || stdioTransports.get(client)?.exitedHow !== undefined;

function closedWhy(client: Client): string {
  const stdio = stdioTransports.get(client);
  if (!stdio) return 'the connection to the MCP server closed';
  return `the MCP server "${stdio.name}" had stopped${stdio.exitedHow ? ` (it ${stdio.exitedHow})` : ''}`;
}

/** A connection's client as one run uses it: every request goes through `use`. */
export interface McpSession {
  use<T>(fn: (client: Client) => Promise<T>): Promise<T>;
}

/**
 * A connection's client, kept open across calls: `use` hands the live one to a call, and opens it again, once per
 * call, when its session is lost (see lostSession). Reopening after a short life waits longer each time (1 s, 2 s,
 * … up to 15 s), so a server that keeps exiting is not started in a tight loop; calls that meet the same lost
 * client share one reopening.
 */
export class McpConnection {
  private current?: Promise<Client>;
  private readonly reopenings = new WeakMap<Client, Promise<Client>>();
  private openedAt = 0;
  private quickLosses = 0;

  constructor(private readonly open: () => Promise<Client>) {}

  /**
   * Runs `fn` with the live client; `reopened` hears why, when this call had to open the connection again. A
   * connection that cannot be opened throws what `open` throws.
   */
  async use<T>(fn: (client: Client) => Promise<T>, reopened?: (why: string) => void): Promise<T> {
    let client = await this.client();
    if (closed(client)) client = await this.reopen(client, closedWhy(client), reopened);
    try {
      return await fn(client);
    } catch (err) {
      const why = lostSession(err, client, await mcpSdk());
      if (!why) throw err;
      return fn(await this.reopen(client, why, reopened));
    }
  }

  close(): void {
    void this.current?.then((c) => c.close()).catch(() => {});
    this.current = undefined;
  }

  private client(): Promise<Client> {
    return this.current ?? this.start(0);
  }

  /** Opens the connection (after `wait` ms) as the current one; a failed opening is forgotten, for the next call. */
  private start(wait: number): Promise<Client> {
    const opening = (wait ? new Promise((r) => setTimeout(r, wait).unref()) : Promise.resolve())
      .then(() => {
        this.openedAt = Date.now();
        return this.open();
      })
      .catch((err: unknown) => {
        if (this.current === opening) this.current = undefined;
        throw err;
      });
    this.current = opening;
    return opening;
  }

  private reopen(lost: Client, why: string, reopened?: (why: string) => void): Promise<Client> {
    let next = this.reopenings.get(lost);
    if (next) return next;
    this.quickLosses = Date.now() - this.openedAt < stableMs ? this.quickLosses + 1 : 1;
    const wait = this.quickLosses > 1 ? Math.min(maxBackoffMs, firstBackoffMs * 2 ** (this.quickLosses - 2)) : 0;
    void lost.close().catch(() => {});
    next = this.start(wait);
    this.reopenings.set(lost, next);
    const again = stdioTransports.has(lost) ? 'started it again' : 'opened a new session';
    reopened?.(`${why}; ${again}${wait ? ` after ${wait / 1000} s` : ''}`);
    return next;
  }
}

/** The connection of this version of the connection (`key` changes when the connection does). */
export function mcpConnectionFor(key: string, open: () => Promise<Client>): McpConnection {
  const cached = connections.get(key);
  const connection = cached?.connection ?? new McpConnection(open);
  if (cached) clearTimeout(cached.timer);
  const timer = setTimeout(() => {
    connections.delete(key);
    connection.close();
  }, idleCloseMs);
  timer.unref();
  connections.set(key, { connection, timer });
  return connection;
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
