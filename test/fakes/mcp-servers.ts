// Real MCP servers for the tests, built with the protocol's own SDK: a help desk over streamable HTTP (it wants a
// bearer token, records every ticket it opens with the idempotency key the caller sent) and, in
// mcp-stdio-server.ts, a calculator a worker starts over stdio.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface HelpDesk {
  url: string;
  token: string;
  /** Tickets opened, in order, with the idempotency key each call carried. */
  tickets: { customer: string; subject: string; idempotencyKey?: string }[];
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

/** The help desk on a free port of 127.0.0.1, stateless (a fresh server per request, as the SDK's examples do). */
export async function startHelpDesk(): Promise<HelpDesk> {
  const token = 'helpdesk-token-4f1e';
  const tickets: HelpDesk['tickets'] = [];
  const httpServer = http.createServer(async (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    const server = helpDeskServer(tickets);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`,
    token,
    tickets,
    close: () =>
      new Promise((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeAllConnections(); // the workers' clients keep theirs open while idle
      }),
  };
}
