// Mail for an agent's address, however it arrived (the SMTP listener, or later a connected mailbox): stored in its
// thread, then a run of the agent started through the same run service as the API, with one item describing the
// message. A redelivered Message-ID is stored once and starts nothing; an agent that is not live keeps the message,
// says why no run started, and runs nothing.
import type { AddressObject, ParsedMail } from 'mailparser';
import { randomUUID } from 'node:crypto';
import type { AgentRow } from '../../db/agents';
import { keepInbound, noteOnMessage, type InboxMessage } from '../../db/inbox';
import { runFileSaver } from '../../db/run-files';
import { recordEvent } from '../../db/timeline';
import { refusalToRun, startRun, type RunServiceDeps } from '../runs/start';
import { ApiError } from '../errors';
import type { Logger } from 'pino';
import { machineSent, type MailVerdict } from '../../model/inbox';
import { inSpan } from '../../services/telemetry/tracing';

export interface IntakeDeps extends RunServiceDeps {
  domain: string;
  logger?: Logger;
}

export type IntakeOutcome =
  | { outcome: 'duplicate' }
  | { outcome: 'started'; message: InboxMessage; runId: string }
  | { outcome: 'kept'; message: InboxMessage; note: string };

const addressesOf = (field: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(field) ? field : field ? [field] : [])
    .flatMap((a) => a.value.map((v) => v.address ?? ''))
    .filter(Boolean);

function headerText(mail: ParsedMail, name: string): string | null {
  const value = mail.headers.get(name);
  if (value === undefined) return null;
  const all = Array.isArray(value) ? value : [value];
  return all.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('\n');
}

const referencesOf = (mail: ParsedMail) =>
  (Array.isArray(mail.references) ? mail.references : mail.references ? mail.references.split(/\s+/) : []).filter(
    Boolean,
  );

/**
 * The message's text. mailparser converts HTML to text only for a message that is nothing but HTML; an HTML body
 * beside attachments is converted the same way here, by parsing it as such a message.
 */
async function textOf(mail: ParsedMail): Promise<string> {
  let text = mail.text ?? '';
  if (!text.trim() && typeof mail.html === 'string') {
    const { simpleParser } = await import('mailparser'); // loaded on first use
    const htmlOnly = await simpleParser(Buffer.from(`Content-Type: text/html; charset=utf-8\r\n\r\n${mail.html}`));
    text = htmlOnly.text ?? '';
  }
  return text.replace(/\r\n/g, '\n').trim();
}

/**
 * `verdict`: Cadre's own SPF/DKIM/DMARC verification, when it received the message itself (its SMTP listener). Each
 * message is a trace of its own (linked to the mailbox watch that read it, if one did), which the run it starts joins.
 */
export function receiveMail(
  deps: IntakeDeps,
  agent: AgentRow,
  mail: ParsedMail,
  verdict?: MailVerdict,
): Promise<IntakeOutcome> {
  return inSpan(
    'inbound mail',
    { 'cadre.agent.id': agent.id },
    async (span) => {
      const outcome = await intake(deps, agent, mail, verdict);
      span.setAttributes({
        'cadre.mail.outcome': outcome.outcome,
        'cadre.run.id': outcome.outcome === 'started' ? outcome.runId : undefined,
      });
      return outcome;
    },
    { newTrace: true, kind: 'consumer' },
  );
}

async function intake(
  deps: IntakeDeps,
  agent: AgentRow,
  mail: ParsedMail,
  verdict?: MailVerdict,
): Promise<IntakeOutcome> {
  const { knex } = deps;
  const attachments = mail.attachments.map((a, i) => a.filename ?? `attachment-${i + 1}`);
  const { message, fresh } = await keepInbound(knex, agent.workspace_id, {
    agent_id: agent.id,
    direction: 'inbound',
    // A message without one (rare, but legal) still needs an id to be replied to.
    message_id: mail.messageId ?? `<${randomUUID()}@${deps.domain}>`,
    in_reply_to: mail.inReplyTo ?? null,
    references: referencesOf(mail),
    from_address: mail.from?.text ?? '',
    to_addresses: addressesOf(mail.to),
    subject: mail.subject ?? '(no subject)',
    text: await textOf(mail),
    attachments,
    authentication_results: headerText(mail, 'authentication-results'),
    received_spf: headerText(mail, 'received-spf'),
    spf_result: verdict?.spf ?? null,
    dkim_result: verdict?.dkim ?? null,
    dmarc_result: verdict?.dmarc ?? null,
    verified_authentication_results: verdict?.authentication_results ?? null,
    // Mail a machine sent (an auto-reply, a list): its run starts, but no reply answers it (activities/inbox-reply.ts).
    auto_submitted: machineSent(headerText(mail, 'auto-submitted'), headerText(mail, 'precedence')),
  });
  if (!fresh) return { outcome: 'duplicate' };

  const timeline = (kind: 'trigger_fired' | 'trigger_skipped', what: string, details: Record<string, unknown>) =>
    recordEvent(knex, {
      workspace_id: agent.workspace_id,
      agent_id: agent.id,
      kind,
      run_id: (details.run_id as string | undefined) ?? null,
      message: `Inbox: mail from ${message.from_address} ("${message.subject}") ${what}`,
      details: { thread_id: message.thread_id, ...details },
    });

  // The door's own question (services/runs/start.ts), asked first so the message is kept with its reason.
  if (refusalToRun(agent, agent.id, 'inbox')) {
    const note = `the agent is ${agent.state}: the message is kept, and no run was started`;
    await noteOnMessage(knex, message.id, { note });
    await timeline('trigger_skipped', `kept, no run started (the agent is ${agent.state})`, { reason: 'paused' });
    return { outcome: 'kept', message, note };
  }
  const item = {
    thread_id: message.thread_id,
    message_id: message.message_id,
    from: message.from_address,
    subject: message.subject,
    text: message.text,
    attachments,
  };
  const workspace = await knex('workspaces').where({ id: agent.workspace_id }).first();
  try {
    const { run } = await startRun(deps, {
      workspace,
      agent,
      input: JSON.stringify([item]),
      trigger: 'inbox',
      idempotencyKey: `inbox:${message.id}`,
      // The attachments are the run's files before its first step looks for them.
      beforeStart: async (opened) => {
        const save = runFileSaver(knex, opened.id, `inbox:${message.id}`);
        for (const [i, a] of mail.attachments.entries())
          await save({ name: attachments[i], contentType: a.contentType, content: a.content, part: String(i) });
      },
    });
    await noteOnMessage(knex, message.id, { run_id: run.id });
    await timeline('trigger_fired', 'started a run', { run_id: run.id });
    return { outcome: 'started', message: { ...message, run_id: run.id }, runId: run.id };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    // Paused or edited meanwhile, the plan's runs used up, an input node that cannot read the item: the message
    // stays in its thread with the reason, as the sender's mail was received.
    const note = `no run was started: ${err.message}`;
    await noteOnMessage(knex, message.id, { note });
    await timeline('trigger_skipped', `kept, no run started (${err.message})`, { reason: err.code });
    deps.logger?.warn({ agent_id: agent.id, message: message.id, reason: err.code }, 'inbox message started no run');
    return { outcome: 'kept', message, note };
  }
}
