// What `email.reply` needs of the Inbox, for one run: the thread it answers (only a thread of the run's own agent),
// and the reply stored in it once sent. Sending itself is the tool handler's (tools/handlers.ts).
import type { Knex } from 'knex';
import { findMessage, storeMessage, threadForReply, type InboxMessage } from '../db/inbox';
import { replyHeaders, replyMessageId, replySubject } from '../model/inbox';

export interface ReplyDraft {
  threadId: string;
  from: string;
  to: string;
  subject: string;
  messageId: string;
  inReplyTo: string;
  references: string[];
}

export interface InboxReplies {
  /** The reply a call with this key sends in the thread: undefined when the thread is not the agent's. */
  draft(threadId: string, idempotencyKey: string): Promise<ReplyDraft | { refused: string }>;
  /** The reply already sent by this call (a retry after the send), if any. */
  sent(messageId: string): Promise<InboxMessage | undefined>;
  record(draft: ReplyDraft, text: string): Promise<void>;
}

export function inboxReplies(knex: Knex, runId: string, domain: string): InboxReplies {
  let agentId: string | undefined;
  return {
    async draft(threadId, idempotencyKey) {
      const found = await threadForReply(knex, runId, threadId);
      if (!found) return { refused: `the agent has no Inbox thread ${threadId}` };
      agentId = found.thread.agent_id as string;
      const headers = replyHeaders(found.messages);
      if (!headers) return { refused: `thread ${threadId} has no message to reply to` };
      const lastInbound = [...found.messages].reverse().find((m) => m.direction === 'inbound')!;
      return {
        threadId,
        from: `${found.thread.local_part}@${domain}`,
        to: lastInbound.from_address,
        subject: replySubject(found.thread.subject as string),
        messageId: replyMessageId(idempotencyKey, domain),
        ...headers,
      };
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
  };
}
