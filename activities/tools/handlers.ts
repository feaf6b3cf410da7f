// The name → handler map for tools that reach other systems. Every call carries an idempotency key derived
// from (run, item, node), so the receiving system can drop a repeat if a retry ever gets that far.
import type { Transporter } from 'nodemailer';
import { ApplicationFailure } from '@temporalio/common';
import { BlockedAddressError, publicFetch } from './ssrf-guard';
import { ToolInput, ToolName } from '../../model/tools';
import { renderOutputFile, textOutputFile, type OutputFormat } from '../output-files';
import { sqlToolHandlers } from '../connectors/sql/handlers';
import { connectorToolHandlers } from '../connectors';
import { sendOnce } from '../connectors/email/send';
import { replyAutoSubmitted } from '../../model/inbox';
import type { ToolContext } from './tool-context';

type Handler<N extends ToolName> = (input: ToolInput<N>, ctx: ToolContext) => Promise<unknown>;

const transports = new Map<string, Transporter>();
async function transport(url: string): Promise<Transporter> {
  const { createTransport } = await import('nodemailer'); // loaded on first use
  let t = transports.get(url);
  if (!t) {
    t = createTransport(url);
    transports.set(url, t);
  }
  return t;
}

async function httpRequest(input: ToolInput<'http.request'>, ctx: ToolContext): Promise<unknown> {
  const url = new URL(input.url);
  const hasBody = input.body !== undefined && input.method !== 'GET';
  const res = await publicFetch(ctx.http.allowHosts)(url, {
    method: input.method,
    headers: {
      accept: 'application/json',
      ...(hasBody ? { 'content-type': 'application/json' } : {}),
      'idempotency-key': ctx.idempotencyKey,
      ...input.headers,
    },
    body: hasBody ? JSON.stringify(input.body) : undefined,
    redirect: 'manual', // a redirect's answer is the tool's answer, as the agent asked for this URL
    signal: AbortSignal.timeout(30_000),
  }).catch((err: unknown) => {
    if (err instanceof BlockedAddressError) throw ApplicationFailure.nonRetryable(err.message, 'BlockedAddress');
    throw err;
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  if (res.status >= 500 || res.status === 429) {
    throw ApplicationFailure.retryable(`${input.method} ${url.host} answered ${res.status}`, 'HttpRetryable');
  }
  if (res.status >= 400) {
    throw ApplicationFailure.nonRetryable(
      `${input.method} ${url.href} answered ${res.status}: ${text.slice(0, 300)}`,
      'HttpRejected',
    );
  }
  return { status: res.status, body };
}

/** `email.send` without a connection: from the deployment's own SMTP server (SMTP_URL), as before connections. */
async function sendEmail(input: ToolInput<'email.send'>, ctx: ToolContext): Promise<unknown> {
  if (!ctx.smtp.url) {
    throw ApplicationFailure.nonRetryable('no SMTP server configured: set SMTP_URL to send email', 'NoSmtp');
  }
  // A stable Message-ID lets mail systems recognise a resend of the same message.
  const messageId = `<${ctx.idempotencyKey.replace(/[^\w.-]/g, '.')}@cadre>`;
  const info = await (
    await transport(ctx.smtp.url)
  ).sendMail({
    from: ctx.smtp.from,
    to: input.to,
    cc: input.cc,
    subject: input.subject,
    text: input.text,
    html: input.html,
    inReplyTo: input.in_reply_to,
    references: input.in_reply_to,
    messageId,
  });
  return { message_id: info.messageId, accepted: info.accepted };
}

/**
 * `email.reply`: from the agent's address (or the connected mailbox the thread came through) to the thread's last
 * sender, In-Reply-To their message and References the thread's chain, with a Message-ID from the call's key; stored
 * in the thread once it is sent. A retry after the store sends nothing; a retry between send and store sends the same
 * Message-ID again, which mail systems recognise as one message (and a mailbox with a sent folder does not resend).
 */
async function replyInThread(input: ToolInput<'email.reply'>, ctx: ToolContext): Promise<unknown> {
  if (!ctx.inbox) throw ApplicationFailure.nonRetryable('email.reply needs a run to reply from', 'NoRun');
  const draft = await ctx.inbox.draft(input.thread_id, ctx.idempotencyKey);
  if ('refused' in draft) throw ApplicationFailure.nonRetryable(draft.refused, 'NoThread');
  // A loop guard held it back (activities/inbox-reply.ts): nothing is sent, and the step says why.
  if ('withheld' in draft) return { sent: false, withheld: draft.withheld, thread_id: draft.threadId, to: draft.to };
  const already = await ctx.inbox.sent(draft.messageId);
  if (!already) {
    const message = {
      subject: draft.subject,
      text: input.text,
      inReplyTo: draft.inReplyTo,
      references: draft.references,
      messageId: draft.messageId,
      // An automatic reply (RFC 3834), so that other responders do not answer it in turn.
      headers: { 'Auto-Submitted': replyAutoSubmitted },
    };
    if (draft.via) await sendOnce(await ctx.inbox.mailbox(draft.via), { ...message, to: [draft.to] });
    else if (ctx.smtp.url)
      await (await transport(ctx.smtp.url)).sendMail({ ...message, from: draft.from, to: draft.to });
    else throw ApplicationFailure.nonRetryable('no SMTP server configured: set SMTP_URL to send email', 'NoSmtp');
    await ctx.inbox.record(draft, input.text);
  }
  return {
    message_id: draft.messageId,
    thread_id: draft.threadId,
    from: draft.from,
    to: draft.to,
    subject: draft.subject,
  };
}

async function generateFile(input: ToolInput<'file.generate'>, ctx: ToolContext): Promise<unknown> {
  if (!ctx.saveFile) throw ApplicationFailure.nonRetryable('file.generate needs a run to write into', 'NoRun');
  // Both add the format's extension unless the name already has it.
  const file =
    input.text !== undefined
      ? textOutputFile(input.format as Exclude<OutputFormat, 'xlsx'>, input.file_name, input.text)
      : await renderOutputFile(input.format, input.file_name, input.rows!, input.fields);
  return ctx.saveFile(file);
}

export const externalToolHandlers: { [N in ToolName]?: Handler<N> } = {
  'http.request': httpRequest,
  'file.generate': generateFile,
  'email.reply': replyInThread,
  ...sqlToolHandlers,
  ...(connectorToolHandlers as { [N in ToolName]?: Handler<N> }),
  // The email connector's tool, which sends as the connection it names or else as the deployment did before.
  'email.send': (input, ctx) =>
    input.connection === undefined ? sendEmail(input, ctx) : connectorToolHandlers['email.send'](input, ctx),
};
