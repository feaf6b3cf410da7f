// What `email.reply` needs of the Inbox, for one run: the thread it answers (only a thread of the run's own agent),
// and the reply stored in it once sent. Sending itself is the tool handler's (tools/handlers.ts): from the agent's
// address, or, for a thread whose mail came through a connected mailbox, from that mailbox.
// And the guards against mail loops: no reply goes to an address of the Inbox itself (the agent's own, another
// agent's) or to the address it would be sent from, none answers mail a machine sent (Auto-Submitted, Precedence:
// bulk | list | junk), and an agent sends at most `maxRepliesPerThreadPerHour` replies in one thread an hour. A reply
// withheld is no error: the step says why, and so does the message it would have answered.
import type { Knex } from 'knex';
import { findMessage, noteOnMessage, repliesSince, storeMessage, threadForReply, type InboxMessage } from '../db/inbox';
import { connectionByName } from '../db/connections';
import { emailConfigSchema } from '../model/connectors/email';
import { maxRepliesPerThreadPerHour, replyHeaders, replyMessageId, replySubject, splitAddress } from '../model/inbox';
import type { EmailConnection } from './connectors/email/imap';

export interface ReplyDraft {
  threadId: string;
  /** The connected mailbox the thread's mail came through, which the reply is sent from; none: the agent's address. */
  via?: string;
  from: string;
  to: string;
  subject: string;
  messageId: string;
  inReplyTo: string;
  references: string[];
}

/** A reply the loop guards hold back: why, and to whom it would have gone. */
export interface WithheldReply {
  withheld: string;
  threadId: string;
  to: string;
}

export interface InboxReplies {
  /**
   * The reply a call with this key sends in the thread; `refused` when the thread is not the agent's, `withheld` when
   * a loop guard holds it back (a retry of a call that sent already is answered as it was).
   */
  draft(threadId: string, idempotencyKey: string): Promise<ReplyDraft | WithheldReply | { refused: string }>;
  /** The reply already sent by this call (a retry after the send), if any. */
  sent(messageId: string): Promise<InboxMessage | undefined>;
  record(draft: ReplyDraft, text: string): Promise<void>;
  /** The connected mailbox a thread's replies go out from (ReplyDraft.via). */
  mailbox(name: string): Promise<EmailConnection>;
}

/** The bare address of "Name <a@b>" or "a@b". */
const bareAddress = (address: string) => /<([^>]+)>\s*$/.exec(address)?.[1] ?? address.trim();

/** The address a connected mailbox sends as, from its settings (no secret is needed for that). */
async function mailboxAddressOf(knex: Knex, workspaceId: string, name: string): Promise<string | undefined> {
  const row = await connectionByName(knex, workspaceId, name);
  const config = row?.kind === 'email' ? emailConfigSchema.safeParse(row.config).data : undefined;
  return config ? (config.from ?? config.imap.user) : undefined;
}

/** Why a reply must not go (a mail loop in the making), or undefined when it may. */
async function loopGuard(
  knex: Knex,
  domain: string,
  reply: ReplyDraft,
  answering: InboxMessage,
): Promise<string | undefined> {
  const to = bareAddress(reply.to).toLowerCase();
  if (splitAddress(to)?.domain === domain.toLowerCase())
    return `${to} is an address of this Inbox: an agent does not answer mail from its own address or another agent's`;
  if (to === bareAddress(reply.from).toLowerCase()) return `${to} is the address the reply would be sent from`;
  if (answering.auto_submitted)
    return `the message was sent automatically (${answering.auto_submitted}), and automatic mail gets no reply`;
  const sent = await repliesSince(knex, reply.threadId, 3600);
  if (sent >= maxRepliesPerThreadPerHour)
    return `the agent has sent ${sent} replies in this thread within the hour, the most it sends (a mail loop?)`;
  return undefined;
}

export function inboxReplies(
  knex: Knex,
  runId: string,
  domain: string,
  openMailbox: (name: string) => Promise<EmailConnection>,
): InboxReplies {
  let agentId: string | undefined;
  return {
    async draft(threadId, idempotencyKey) {
      const found = await threadForReply(knex, runId, threadId);
      if (!found) return { refused: `the agent has no Inbox thread ${threadId}` };
      const { thread } = found;
      agentId = thread.agent_id as string;
      const headers = replyHeaders(found.messages);
      if (!headers) return { refused: `thread ${threadId} has no message to reply to` };
      const lastInbound = [...found.messages].reverse().find((m) => m.direction === 'inbound')!;
      const via = (thread.connection as string | null) ?? undefined;
      const from = via
        ? await mailboxAddressOf(knex, thread.workspace_id as string, via)
        : `${thread.local_part}@${domain}`;
      if (!from)
        return { refused: `the mailbox "${via}" this thread came through is no longer connected: reconnect it` };
      const reply: ReplyDraft = {
        threadId,
        via,
        from,
        to: lastInbound.from_address,
        subject: replySubject(thread.subject as string),
        messageId: replyMessageId(idempotencyKey, splitAddress(bareAddress(from))?.domain ?? domain),
        ...headers,
      };
      if (await findMessage(knex, thread.agent_id as string, reply.messageId)) return reply; // sent already: as it was
      const why = await loopGuard(knex, domain, reply, lastInbound);
      if (!why) return reply;
      await noteOnMessage(knex, lastInbound.id, { note: `no reply was sent: ${why}` });
      return { withheld: why, threadId, to: reply.to };
    },
    async sent(messageId) {
      return agentId ? findMessage(knex, agentId, messageId) : undefined;
    },
    async record(draft, text) {
      const run = await knex('runs').where({ id: runId }).first('workspace_id');
      await storeMessage(knex, run.workspace_id, draft.threadId, {
        agent_id: agentId!,
        direction: 'outbound',
        message_id: draft.messageId,
        in_reply_to: draft.inReplyTo,
        references: draft.references,
        from_address: draft.from,
        to_addresses: [draft.to],
        subject: draft.subject,
        text,
        attachments: [],
        authentication_results: null,
        received_spf: null,
        run_id: runId,
      });
    },
    mailbox: openMailbox,
  };
}
