// Real MCP servers for the tests, built with the protocol's own SDK: a help desk over streamable HTTP (it wants a
// bearer token, records every ticket it opens with the idempotency key the caller sent; stateless, or keeping
// sessions as the SDK's stateful example does, and then restartable, forgetting them) and, in
// mcp-stdio-server.ts, a calculator a worker starts over stdio.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export interface HelpDesk {
  url: string;
  token: string;
  /** Tickets opened, in order, with the idempotency key each call carried. */
  tickets: { customer: string; subject: string; idempotencyKey?: string }[];
  /** Sessions opened so far (a server keeping sessions). */
  sessionsOpened: number;
  /** Stops and starts again on the same port, as a deployed server does: every session it knew is forgotten. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

const customers: Record<string, { plan: string; open_tickets: number }> = {
  acme: { plan: 'enterprise', open_tickets: 2 },
  globex: { plan: 'free', open_tickets: 0 },
};

function helpDeskServer(tickets: HelpDesk['tickets']): McpServer {
  const server = new McpServer({ name: 'help-desk', version: '2.1.0' });
  server.registerTool(
    'lookup_customer',
    {
      description: "A customer's plan and open tickets.",
      inputSchema: { customer: z.string() },
      outputSchema: { plan: z.string(), open_tickets: z.number() },
      annotations: { readOnlyHint: true },
    },
    async ({ customer }) => {
      const found = customers[customer];
      if (!found) return { isError: true, content: [{ type: 'text', text: `no customer "${customer}"` }] };
      return { content: [{ type: 'text', text: JSON.stringify(found) }], structuredContent: found };
    },
  );
  server.registerTool(
    'create_ticket',
    {
      description: 'Open a support ticket for a customer.',
      inputSchema: { customer: z.string(), subject: z.string().min(3) },
    },
    async ({ customer, subject }, extra) => {
      const idempotencyKey = extra._meta?.['cadre/idempotency-key'] as string | undefined;
      const seen = tickets.findIndex((t) => idempotencyKey && t.idempotencyKey === idempotencyKey);
      if (seen < 0) tickets.push({ customer, subject, idempotencyKey });
      const number = (seen < 0 ? tickets.length : seen + 1) + 1000;
      return { content: [{ type: 'text', text: `opened ticket #${number}` }] };
    },
  );
  return server;
}

/**
 * The help desk on a free port of 127.0.0.1: stateless (a fresh server per request, as the SDK's examples do), or
 * with `sessions`, a server per session as the SDK's stateful example keeps them, answering a session it does not
 * know as that example does (400, "Bad Request: No valid session ID provided").
 */
export async function startHelpDesk({ sessions: stateful = false }: { sessions?: boolean } = {}): Promise<HelpDesk> {
  const token = 'helpdesk-token-4f1e';
  const tickets: HelpDesk['tickets'] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const httpServer = http.createServer(async (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    if (!stateful) {
      const server = helpDeskServer(tickets);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body: unknown = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (!transport && id === undefined && req.method === 'POST' && isInitializeRequest(body)) {
      const opened: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          sessions.set(sid, opened);
          desk.sessionsOpened++;
        },
      });
      opened.onclose = () => {
        if (opened.sessionId) sessions.delete(opened.sessionId);
      };
      await helpDeskServer(tickets).connect(opened);
      transport = opened;
    }
    if (!transport) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32000, message: 'Bad Request: No valid session ID provided' },
          id: null,
        }),
      );
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve) => httpServer.listen(port, '127.0.0.1', () => resolve()));
  const stop = async () => {
    const known = [...sessions.values()];
    sessions.clear();
    await Promise.all(known.map((t) => t.close()));
    await new Promise<void>((resolve) => {
      httpServer.close(() => resolve());
      httpServer.closeAllConnections(); // the workers' clients keep theirs open while idle
    });
  };
  await listen(0);
  const port = (httpServer.address() as AddressInfo).port;
  const desk: HelpDesk = {
    url: `http://127.0.0.1:${port}/mcp`,
    token,
    tickets,
    sessionsOpened: 0,
    restart: async () => {
      await stop();
      await listen(port);
    },
    close: stop,
  };
  return desk;
}
