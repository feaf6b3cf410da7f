// The Inbox's threads and messages, and each agent's address. Scoped by workspace like every other aggregate: a
// thread id from another workspace is simply not found.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AgentRow } from './agents';
import { idPrefixOfLocalPart, inboxLocalPart } from '../model/inbox';
import { decodeTimeCursor, timeCursorPage } from './runs';

export type Direction = 'inbound' | 'outbound';

export interface InboxMessage {
  id: string;
  thread_id: string;
  agent_id: string;
  direction: Direction;
  message_id: string;
  in_reply_to: string | null;
  references: string[];
  from_address: string;
  to_addresses: string[];
  subject: string;
  text: string;
  attachments: string[];
  authentication_results: string | null;
  received_spf: string | null;
  /**
   * Cadre's own verdict (migration 023), from its SMTP listener; null for a message it did not verify. Optional
   * here so that the paths that store other messages need not name them: they are stored as null.
   */
  spf_result?: string | null;
  dkim_result?: string | null;
  dmarc_result?: string | null;
  verified_authentication_results?: string | null;
  /**
   * Set when a machine sent it, as its headers said ("auto-submitted: auto-replied", "precedence: bulk"; migration
   * 028): no reply answers it. Optional like the verdict: stored as null when not named.
   */
  auto_submitted?: string | null;
  run_id: string | null;
  note: string | null;
  created_at: Date;
}

/** The agent's local part, made and stored on first use (so a later rename keeps it). */
export async function ensureInboxLocalPart(knex: Knex, agent: Pick<AgentRow, 'id' | 'name' | 'workspace_id'>) {
  const stored = await knex('inbox_addresses').where({ agent_id: agent.id }).first('local_part');
  if (stored) return stored.local_part as string;
  await knex('inbox_addresses')
    .insert({ agent_id: agent.id, workspace_id: agent.workspace_id, local_part: inboxLocalPart(agent) })
    .onConflict('agent_id')
    .ignore();
  return (await knex('inbox_addresses').where({ agent_id: agent.id }).first('local_part')).local_part as string;
}

/**
 * The agent a local part belongs to: its stored address, or (an agent whose address nobody has looked at yet) the
 * agent whose id starts as the local part ends and whose name gives that very local part.
 */
export async function agentOfLocalPart(knex: Knex, localPart: string): Promise<AgentRow | undefined> {
  const lower = localPart.toLowerCase();
  const stored = await knex('inbox_addresses')
    .join('agents', 'agents.id', 'inbox_addresses.agent_id')
    .where('inbox_addresses.local_part', lower)
    .first('agents.*');
  if (stored) return stored;
  const prefix = idPrefixOfLocalPart(lower);
  if (!prefix) return undefined;
  const candidates: AgentRow[] = await knex('agents')
    .whereRaw(`replace(id::text, '-', '') like ?`, [`${prefix}%`])
    .whereNotExists(knex('inbox_addresses').whereRaw('inbox_addresses.agent_id = agents.id'));
  const agent = candidates.find((a) => inboxLocalPart(a) === lower);
  if (agent) await ensureInboxLocalPart(knex, agent);
  return agent;
}

/** The thread of the agent that holds any of these Message-IDs (a reply's In-Reply-To and References). */
export async function threadOfMessageIds(knex: Knex, agentId: string, messageIds: string[]) {
  if (messageIds.length === 0) return undefined;
  const row = await knex('inbox_messages')
    .where({ agent_id: agentId })
    .whereIn('message_id', messageIds)
    .orderBy('created_at', 'desc')
    .first('thread_id');
  return row?.thread_id as string | undefined;
}

export type NewMessage = Omit<InboxMessage, 'id' | 'thread_id' | 'created_at' | 'run_id' | 'note'> & {
  run_id?: string | null;
};

class AlreadyStored extends Error {}

/**
 * Stores a message in `threadId`, or in a new thread of its subject when that is undefined. Answers undefined when
 * the agent already has a message of this Message-ID (a redelivery, a retried send): then nothing is written.
 */
export async function storeMessage(
  knex: Knex,
  workspaceId: string,
  threadId: string | undefined,
  message: NewMessage,
  newThread: { connection?: string } = {},
): Promise<InboxMessage | undefined> {
  return knex
    .transaction(async (trx) => {
      let thread = threadId;
      if (!thread) {
        thread = randomUUID();
        await trx('inbox_threads').insert({
          id: thread,
          workspace_id: workspaceId,
          agent_id: message.agent_id,
          subject: message.subject,
          connection: newThread.connection ?? null,
        });
      }
      const [row] = await trx('inbox_messages')
        .insert({
          ...message,
          id: randomUUID(),
          thread_id: thread,
          references: JSON.stringify(message.references),
          to_addresses: JSON.stringify(message.to_addresses),
          attachments: JSON.stringify(message.attachments),
        })
        .onConflict(['agent_id', 'message_id'])
        .ignore()
        .returning('*');
      if (!row) throw new AlreadyStored(); // rolls back a thread made for it
      await trx('inbox_threads').where({ id: thread }).update({ last_message_at: trx.fn.now() });
      return row as InboxMessage;
    })
    .catch((err) => {
      if (err instanceof AlreadyStored) return undefined;
      throw err;
    });
}

/**
 * Keeps an inbound message in the thread its In-Reply-To and References point to, or in a new one (of `connection`
 * when it came through a connected mailbox). A message the agent already has (read again) is answered as it was
 * stored, with `fresh` false.
 */
export async function keepInbound(
  knex: Knex,
  workspaceId: string,
  message: NewMessage,
  newThread: { connection?: string } = {},
): Promise<{ message: InboxMessage; fresh: boolean }> {
  const threadId = await threadOfMessageIds(knex, message.agent_id, [
    ...(message.in_reply_to ? [message.in_reply_to] : []),
    ...message.references,
  ]);
  const stored = await storeMessage(knex, workspaceId, threadId, message, newThread);
  if (stored) return { message: stored, fresh: true };
  return { message: (await findMessage(knex, message.agent_id, message.message_id))!, fresh: false };
}

export async function findMessage(knex: Knex, agentId: string, messageId: string) {
  return (await knex('inbox_messages').where({ agent_id: agentId, message_id: messageId }).first()) as
    InboxMessage | undefined;
}

export async function noteOnMessage(knex: Knex, id: string, patch: { run_id?: string; note?: string }) {
  await knex('inbox_messages').where({ id }).update(patch);
}

export async function getThread(knex: Knex, workspaceId: string, threadId: string) {
  if (!/^[0-9a-f-]{36}$/i.test(threadId)) return undefined;
  return knex('inbox_threads')
    .join('agents', 'agents.id', 'inbox_threads.agent_id')
    .where({ 'inbox_threads.id': threadId, 'inbox_threads.workspace_id': workspaceId })
    .first('inbox_threads.*', 'agents.name as agent_name');
}

/** A thread's messages, oldest first, each with the status of its run. */
export async function threadMessages(
  knex: Knex,
  threadId: string,
): Promise<(InboxMessage & { run_status: string | null })[]> {
  return knex('inbox_messages')
    .leftJoin('runs', 'runs.id', 'inbox_messages.run_id')
    .where('inbox_messages.thread_id', threadId)
    .orderBy([
      { column: 'inbox_messages.created_at', order: 'asc' },
      { column: 'inbox_messages.id', order: 'asc' },
    ])
    .select('inbox_messages.*', 'runs.status as run_status');
}

export interface InboxThread {
  id: string;
  workspace_id: string;
  agent_id: string;
  subject: string;
  /** The connected mailbox its mail came through (an email.received trigger's); null: the agent's own address. */
  connection: string | null;
  created_at: Date;
  last_message_at: Date;
}

/**
 * A page of the agent's threads, newest activity first, each with its last message and the runs its messages
 * started; the cursor is the last one's (last_message_at, id).
 */
export async function listThreads(knex: Knex, agentId: string, page: { limit: number; cursor?: string }) {
  const q = knex('inbox_threads')
    .where({ agent_id: agentId })
    .select('inbox_threads.*', knex.raw('last_message_at::text as cursor_at'));
  if (page.cursor) q.whereRaw('(last_message_at, id) < (?::timestamptz, ?::uuid)', decodeTimeCursor(page.cursor));
  const rows: (InboxThread & { cursor_at: string })[] = await q
    .orderBy([
      { column: 'last_message_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(page.limit + 1);
  const { data: threads, next_cursor } = timeCursorPage(rows, page.limit);
  return { data: await withMessages(knex, threads), next_cursor };
}

/** Threads with their message count, last message and the runs their requests started. */
async function withMessages(knex: Knex, threads: InboxThread[]) {
  if (threads.length === 0) return [];
  const ids = threads.map((t) => t.id);
  const messages = await knex('inbox_messages')
    .leftJoin('runs', 'runs.id', 'inbox_messages.run_id')
    .whereIn('inbox_messages.thread_id', ids)
    .orderBy('inbox_messages.created_at', 'asc')
    .select('inbox_messages.*', 'runs.status as run_status');
  return threads.map((t) => {
    const mine = messages.filter((m) => m.thread_id === t.id) as (InboxMessage & { run_status: string | null })[];
    return {
      ...t,
      message_count: mine.length,
      last_message: mine.at(-1),
      runs: mine
        .filter((m) => m.direction === 'inbound' && m.run_id)
        .map((m) => ({ id: m.run_id!, status: m.run_status! })),
    };
  });
}

/** What a reply from a run needs of its thread: the thread, if it is the run's agent's, and its messages. */
export async function threadForReply(knex: Knex, runId: string, threadId: string) {
  const thread = await knex('inbox_threads')
    .join('runs', 'runs.agent_id', 'inbox_threads.agent_id')
    // An agent whose mail comes only through a connected mailbox may never have had its own address made.
    .leftJoin('inbox_addresses', 'inbox_addresses.agent_id', 'inbox_threads.agent_id')
    .where({ 'runs.id': runId, 'inbox_threads.id': threadId })
    .first('inbox_threads.*', 'inbox_addresses.local_part');
  if (!thread) return undefined;
  const messages: InboxMessage[] = await knex('inbox_messages')
    .where({ thread_id: threadId })
    .orderBy([
      { column: 'created_at', order: 'asc' },
      { column: 'id', order: 'asc' },
    ]);
  return { thread, messages };
}

/** How many replies the agent sent in this thread over the last `seconds` (the Inbox's loop guard). */
export async function repliesSince(knex: Knex, threadId: string, seconds: number): Promise<number> {
  const [{ count }] = await knex('inbox_messages')
    .where({ thread_id: threadId, direction: 'outbound' })
    .where('created_at', '>', knex.raw(`now() - make_interval(secs => ?)`, [seconds]))
    .count<{ count: string | number }[]>({ count: '*' });
  return Number(count);
}
