// Sending as a connected mailbox, with nodemailer over its SMTP server. The Message-ID is derived from the call's
// idempotency key, so a resend of the same step is the same message to every mail system; and when the mailbox has
// a sent folder it is looked up first, so a step retried after its mail went out does not send it again.
import net from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import type { Transporter } from 'nodemailer';
import type { z } from 'zod';
import type { emailConnector, EmailConfig } from '../../../model/connectors/email';
import { BlockedAddressError, publicAddress } from '../../tools/ssrf-guard';
import type { ToolContext } from '../../tools/tool-context';
import { clientCache } from '../connector';
import { inFolder, mustUpgrade, refused, sentFolderOf, imapClient, type EmailConnection } from './imap';

export type SendInput = z.infer<(typeof emailConnector)['tools']['email.send']['input']>;

const smtpPort = (smtp: NonNullable<EmailConfig['smtp']>) => smtp.port ?? (smtp.secure ? 465 : 587);

/** The same key gives the same Message-ID: `<run.item.node@domain>`. */
export const stableMessageId = (idempotencyKey: string, domain: string) =>
  `<${idempotencyKey.replace(/[^\w.-]/g, '.')}@${domain}>`;

const domainOf = (address: string) => /@([\w.-]+)>?\s*$/.exec(address)?.[1] ?? 'cadre';

/** A transport to `address`, the checked address of the SMTP host (never resolved again; TLS checks the name). */
async function smtpTransport(c: EmailConnection, address: string): Promise<Transporter> {
  const smtp = c.config.smtp!;
  const { createTransport } = await import('nodemailer'); // loaded on first use
  return createTransport({
    host: address,
    servername: net.isIP(smtp.host) ? undefined : smtp.host,
    port: smtpPort(smtp),
    secure: smtp.secure,
    requireTLS: !smtp.secure && mustUpgrade(smtp.host, c.limits.allowHosts),
    auth: { user: smtp.user ?? c.config.imap.user, pass: c.credentials.smtp_password ?? c.credentials.password },
    connectionTimeout: 20_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
    logger: false,
  });
}

const transports = clientCache<Transporter>((t) => t.close());

/** What a nodemailer error means for the person who set the connection up, and whether trying again may help. */
export function smtpFailure(config: EmailConfig, err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof BlockedAddressError) return refused(err.message, 'BlockedAddress');
  const e = err as Error & { code?: string; responseCode?: number; response?: string };
  const smtp = config.smtp!;
  const server = `the SMTP server ${smtp.host}:${smtpPort(smtp)}`;
  if (e.code === 'EAUTH')
    return refused(
      `${server} refused the login of ${smtp.user ?? config.imap.user}: check the SMTP password and reconnect it in ` +
        'Integrations',
      'EmailLoginRefused',
    );
  if (e.code === 'ETLS' || /certificate|SSL|TLS/i.test(e.message))
    return refused(`TLS with ${server} failed (${e.message}): check its port and the TLS setting`, 'EmailTls');
  if (e.code === 'EDNS' || /ENOTFOUND/.test(e.message))
    return refused(`${server} does not exist (no such host): check the host name`);
  if (e.responseCode !== undefined && e.responseCode >= 500)
    return refused(`${server} refused the message: ${e.response ?? e.message}`, 'EmailRejected');
  return ApplicationFailure.retryable(`${server} could not take the message now: ${e.message}`, 'EmailUnreachable');
}

/** Where this mailbox keeps sent mail: the folder its settings name, else the one its server marks \Sent. */
async function sentFolder(c: EmailConnection): Promise<string | undefined> {
  return c.config.sent_folder ?? (await sentFolderOf(await imapClient(c)));
}

const asList = (v: string | string[] | undefined) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

export async function sendAsMailbox(input: SendInput, c: EmailConnection, ctx: ToolContext) {
  return sendOnce(c, {
    to: asList(input.to),
    cc: asList(input.cc),
    subject: input.subject,
    text: input.text,
    html: input.html,
    messageId: stableMessageId(ctx.idempotencyKey, domainOf(mailboxAddress(c))),
    inReplyTo: input.in_reply_to,
    references: input.in_reply_to,
  });
}

/** The address the mailbox sends as. */
export const mailboxAddress = (c: Pick<EmailConnection, 'config'>) => c.config.from ?? c.config.imap.user;

export interface OutgoingMail {
  to?: string[];
  cc?: string[];
  subject: string;
  text: string;
  html?: string;
  /** Derived from the call's key, so a retried step is recognised as the same message. */
  messageId: string;
  inReplyTo?: string;
  references?: string | string[];
  /** Headers of its own (an Inbox reply's `Auto-Submitted: auto-replied`). */
  headers?: Record<string, string>;
}

/** Sends as the mailbox, unless its sent folder already holds a message of this Message-ID (a retried step). */
export async function sendOnce(c: EmailConnection, message: OutgoingMail) {
  const { smtp } = c.config;
  if (!smtp)
    throw refused(
      `connection "${c.name}" only reads mail: give it an SMTP server in Integrations to send`,
      'EmailNoSmtp',
    );
  const { messageId } = message;
  const sent = await sentFolder(c);
  if (sent) {
    const found = await inFolder(c, sent, (client) =>
      client.search({ header: { 'message-id': messageId } }, { uid: true }),
    );
    if (found && found.length > 0) return { message_id: messageId, already_sent: true, sent_folder: sent };
  }
  const { default: MailComposer } = await import('nodemailer/lib/mail-composer');
  const mail = new MailComposer({ from: mailboxAddress(c), ...message }).compile();
  const raw = await mail.build();
  let info;
  try {
    const address = await publicAddress(smtp.host, smtpPort(smtp), c.limits.allowHosts);
    const transport = await transports(`${c.version}@${address}`, () => smtpTransport(c, address));
    info = await transport.sendMail({ envelope: mail.getEnvelope(), raw });
  } catch (err) {
    throw smtpFailure(c.config, err);
  }
  // The copy that lets a retry see the mail went out, for servers that do not keep one themselves.
  if (sent && c.config.save_sent) await inFolder(c, sent, (client) => client.append(sent, raw, ['\\Seen']));
  return {
    message_id: messageId,
    accepted: (info.accepted ?? []).map(String),
    rejected: (info.rejected ?? []).map(String),
    ...(sent ? { sent_folder: sent } : {}),
  };
}

/** Logs in to the SMTP server as a send would, without sending. */
export async function verifySmtp(c: EmailConnection): Promise<void> {
  const smtp = c.config.smtp!;
  let transport: Transporter | undefined;
  try {
    transport = await smtpTransport(c, await publicAddress(smtp.host, smtpPort(smtp), c.limits.allowHosts));
    await transport.verify();
  } catch (err) {
    throw smtpFailure(c.config, err);
  } finally {
    transport?.close();
  }
}
