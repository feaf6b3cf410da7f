// An email.received trigger that keeps its mail in the Inbox (option `inbox`): each message read from the connected
// mailbox becomes a message of the agent's Inbox, in the thread its In-Reply-To and References point to, so the
// run's item carries a thread_id that email.reply answers, from the mailbox (activities/inbox-reply.ts).
import type { Knex } from 'knex';
import { keepInbound, noteOnMessage, type InboxMessage } from '../db/inbox';
import type { TriggerRow } from '../db/triggers';
import type { EventConfig } from '../model/trigger';

/** What the email connector's poller reports of a message (activities/connectors/email/received.ts). */
interface ReceivedMail {
  message_id: string | null;
  in_reply_to: string | null;
  references: string[];
  from: string;
  to: string[];
  subject: string;
  text: string;
  attachments: string[];
  /** Set when a machine sent it (messages.ts): no reply answers it. */
  auto_submitted?: string | null;
}

export const keepsMailInInbox = (config: EventConfig) =>
  config.event === 'email.received' && (config.options as { inbox?: boolean } | undefined)?.inbox === true;

/** Keeps the event's message in the agent's Inbox (once, however often it is read): the stored message. */
export async function keepReceivedMail(
  knex: Knex,
  trigger: TriggerRow,
  config: EventConfig,
  event: { id: string; data: Record<string, unknown> },
): Promise<InboxMessage> {
  const mail = event.data as unknown as ReceivedMail;
  const { message } = await keepInbound(
    knex,
    trigger.workspace_id,
    {
      agent_id: trigger.agent_id,
      direction: 'inbound',
      // A message without one (legal, if rare) gets an id that is the same each time it is read.
      message_id: mail.message_id ?? `<${event.id.replace(/[^\w.-]/g, '.')}.${trigger.id}@cadre>`,
      in_reply_to: mail.in_reply_to,
      references: mail.references ?? [],
      from_address: mail.from,
      to_addresses: mail.to ?? [],
      subject: mail.subject || '(no subject)',
      text: mail.text ?? '',
      attachments: mail.attachments ?? [],
      authentication_results: null,
      received_spf: null,
      auto_submitted: mail.auto_submitted ?? null,
    },
    { connection: config.connection },
  );
  return message;
}

/** Ties the Inbox message to the run it started, or says why it started none. */
export async function noteRunOfMail(
  knex: Knex,
  message: InboxMessage,
  outcome: { runId: string } | { skipped: string },
) {
  if ('runId' in outcome) await noteOnMessage(knex, message.id, { run_id: outcome.runId });
  else await noteOnMessage(knex, message.id, { note: `no run was started: ${outcome.skipped}` });
}
