// The Inbox as the API shows it: an agent's address and threads (newest activity first, each with its last message
// and the runs its requests started), and a thread's messages in order, each inbound one with its run's status.
import { Router } from 'express';
import { nullable, obj, ref, ts, type Route } from '../openapi-schemas';
import { ensureInboxLocalPart, getThread, listThreads, threadMessages, type InboxMessage } from '../../db/inbox';
import { runStatuses } from '../../db/runs';
import { requirePermission } from '../auth';
import { loadAgent } from '../loaders';
import { ApiError } from '../problem';
import { param } from '../validation';
import { parseQuery, queries } from '../query-params';
import type { RouteDeps } from './agents';

const iso = (d: Date | string) => new Date(d).toISOString();

export function messageJson(m: InboxMessage & { run_status?: string | null }) {
  return {
    id: m.id,
    direction: m.direction,
    message_id: m.message_id,
    in_reply_to: m.in_reply_to,
    references: m.references,
    from: m.from_address,
    to: m.to_addresses,
    subject: m.subject,
    text: m.text,
    attachments: m.attachments,
    authentication_results: m.authentication_results,
    received_spf: m.received_spf,
    verification:
      m.spf_result && m.dkim_result && m.dmarc_result
        ? {
            spf: m.spf_result,
            dkim: m.dkim_result,
            dmarc: m.dmarc_result,
            authentication_results: m.verified_authentication_results ?? null,
          }
        : null,
    run: m.run_id ? { id: m.run_id, status: m.run_status ?? 'unknown' } : null,
    note: m.note,
    created_at: iso(m.created_at),
  };
}

export function inboxRoutes(deps: RouteDeps & { inboxDomain?: string }): Router {
  const { knex } = deps;
  const domain = deps.inboxDomain ?? 'localhost';
  const r = Router();

  r.get('/agents/:id/inbox', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listInboxThreads, req.query);
    const agent = await loadAgent(knex, req.auth!.workspace.id, param(req, 'id'));
    const address = `${await ensureInboxLocalPart(knex, agent)}@${domain}`;
    const threads = await listThreads(knex, agent.id, q);
    res.json({
      address,
      data: threads.data.map((t) => ({
        id: t.id,
        agent_id: t.agent_id,
        subject: t.subject,
        connection: t.connection ?? null,
        created_at: iso(t.created_at),
        last_message_at: iso(t.last_message_at),
        message_count: t.message_count,
        last_message: t.last_message ? messageJson(t.last_message) : null,
        runs: t.runs,
      })),
      next_cursor: threads.next_cursor,
    });
  });

  r.get('/inbox/threads/:id', requirePermission('read'), async (req, res) => {
    const thread = await getThread(knex, req.auth!.workspace.id, param(req, 'id'));
    if (!thread) throw new ApiError(404, 'thread_not_found', `no Inbox thread ${param(req, 'id')} in this workspace`);
    const local = await ensureInboxLocalPart(knex, {
      id: thread.agent_id,
      name: thread.agent_name,
      workspace_id: thread.workspace_id,
    });
    const messages = await threadMessages(knex, thread.id);
    res.json({
      id: thread.id,
      agent_id: thread.agent_id,
      agent_name: thread.agent_name,
      address: `${local}@${domain}`,
      connection: thread.connection ?? null,
      subject: thread.subject,
      created_at: iso(thread.created_at),
      last_message_at: iso(thread.last_message_at),
      messages: messages.map(messageJson),
    });
  });

  return r;
}

/** An Inbox thread's connected mailbox (an email.received trigger's), which its replies go out from. */
const mailboxOfThread = {
  ...nullable({ type: 'string' }),
  description:
    "the connected mailbox the thread's mail came through, which replies are sent from; null: the agent's address",
};

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const inboxRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/agents/{id}/inbox',
    id: 'listInboxThreads',
    summary:
      "The agent's Inbox: its address and its threads, newest activity first (?limit=&cursor=), each with its last message and the runs its requests started",
    scope: 'read',
    ok: {
      200: obj({
        address: { type: 'string' },
        data: {
          type: 'array',
          items: obj({
            id: { type: 'string', format: 'uuid' },
            agent_id: { type: 'string', format: 'uuid' },
            subject: { type: 'string' },
            connection: mailboxOfThread,
            created_at: ts,
            last_message_at: ts,
            message_count: { type: 'integer' },
            last_message: nullable(ref('InboxMessage')),
            runs: {
              type: 'array',
              items: obj({ id: { type: 'string', format: 'uuid' }, status: { enum: [...runStatuses] } }),
            },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
  },
  {
    method: 'get',
    path: '/inbox/threads/{id}',
    id: 'getInboxThread',
    summary: "An Inbox thread's messages in order, requests with the run each started, and the agent's replies",
    scope: 'read',
    ok: {
      200: obj({
        id: { type: 'string', format: 'uuid' },
        agent_id: { type: 'string', format: 'uuid' },
        agent_name: { type: 'string' },
        address: { type: 'string' },
        connection: mailboxOfThread,
        subject: { type: 'string' },
        created_at: ts,
        last_message_at: ts,
        messages: { type: 'array', items: ref('InboxMessage') },
      }),
    },
  },
];
