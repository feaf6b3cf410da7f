// The Inbox's own SMTP server: takes mail for the agents' addresses (<local part>@CADRE_INBOX_DOMAIN) and hands
// each message to the intake. It runs in the web process, beside the API: it needs only the database and the run
// service. Refusals are made while the sender is still connected, so it learns why: an unknown recipient at RCPT
// TO (550), a message over the size limit at MAIL FROM (its SIZE) or at the end of DATA (552; what comes past the
// limit is read to its end and dropped, never kept), a message that cannot be read (more MIME parts than the
// parser takes, a NUL character) with 554: permanent, as sending it again changes nothing. Only a failure of the
// inbox itself (its database) is answered 451, to be tried again later. Each message it takes gets Cadre's own
// SPF/DKIM/DMARC verdict (./authentication.ts), recorded beside it and never a reason to refuse it.
import fs from 'node:fs';
import type { SMTPServerSession } from 'smtp-server';
import type { Readable } from 'node:stream';
import type { ParsedMail } from 'mailparser';
import { agentOfLocalPart } from '../../db/inbox';
import { splitAddress } from '../../model/inbox';
import type { CadreConfig } from '../../cadre.config';
import { receiveMail, type IntakeDeps } from './intake';
import { deliveries } from '../../services/telemetry/metrics';
import { verifyMessage, type DnsResolver } from './authentication';

export interface InboxListener {
  port: number;
  close(): Promise<void>;
}

const smtpError = (responseCode: number, message: string) => Object.assign(new Error(message), { responseCode });

/** The most MIME parts (the message itself, each multipart and each of their parts) a message may have. */
export const MAX_MIME_PARTS = 1000;

/** A message refused for good (5xx): what it is, not the inbox, is the reason; logged as a warning, not an error. */
class Refused extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The message as it came, or only that it was over `maxBytes`: past the limit the rest of the stream is read to
 * its end (the sender waits for an answer after its last byte) and dropped, so an oversize message costs no memory.
 * `stream.sizeExceeded` is smtp-server's own count (its `size` option), kept up to date as the data comes.
 */
export async function readMessage(
  stream: Readable & { sizeExceeded?: boolean },
  maxBytes: number,
): Promise<{ raw: Buffer; exceeded: boolean }> {
  let chunks: Buffer[] = [];
  let size = 0;
  let exceeded = false;
  for await (const chunk of stream) {
    if (exceeded) continue;
    size += (chunk as Buffer).length;
    if (size > maxBytes || stream.sizeExceeded) {
      exceeded = true;
      chunks = [];
    } else chunks.push(chunk as Buffer);
  }
  exceeded ||= stream.sizeExceeded === true;
  return { raw: exceeded ? Buffer.alloc(0) : Buffer.concat(chunks), exceeded };
}

const hasNul = (value: unknown): boolean => {
  if (typeof value === 'string') return value.includes('\0');
  if (Array.isArray(value)) return value.some(hasNul);
  if (value instanceof Map) return hasNul([...value.values()]);
  if (value === null || typeof value !== 'object' || value instanceof Date || Buffer.isBuffer(value)) return false;
  return Object.values(value).some(hasNul);
};

/**
 * The message parsed, or refused: mail may not carry NUL (RFC 5322; no text field stored in PostgreSQL can hold it),
 * whether as a byte or encoded in a header or a body; and the parser takes at most MAX_MIME_PARTS parts, however
 * they are nested.
 */
async function parseMessage(raw: Buffer): Promise<ParsedMail> {
  const unreadable = (why: string) => new Refused(554, `5.6.0 the message cannot be read: ${why}`);
  if (raw.includes(0)) throw unreadable('it contains a NUL character (U+0000), which mail may not carry');
  const { simpleParser } = await import('mailparser'); // loaded on first use
  let mail: ParsedMail;
  try {
    mail = await simpleParser(raw, { maxChildNodes: MAX_MIME_PARTS });
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    throw unreadable(
      /child nodes/i.test(message)
        ? `it has more than ${MAX_MIME_PARTS} MIME parts`
        : message.split('\n')[0].slice(0, 200),
    );
  }
  const fields: [string, unknown][] = [
    ['a header', mail.headers],
    ['its text', [mail.text, mail.html]],
    ['an attachment', mail.attachments.map((a) => [a.filename, a.contentType])],
  ];
  const found = fields.find(([, value]) => hasNul(value));
  if (found) throw unreadable(`${found[0]} contains a NUL character (U+0000), which mail may not carry`);
  return mail;
}

export interface InboxListenerDeps extends Omit<IntakeDeps, 'domain'> {
  /** The DNS the SPF/DKIM/DMARC checks ask (tests serve their own records); the system's resolver by default. */
  resolver?: DnsResolver;
}

export async function startInboxListener(
  listenerDeps: InboxListenerDeps,
  inbox: CadreConfig['inbox'] & { smtpPort: number },
): Promise<InboxListener> {
  const { resolver, ...deps } = listenerDeps;
  const { knex, logger } = deps;
  const megabytes = Math.round((inbox.maxBytes / 1024 / 1024) * 10) / 10;

  const agentOf = async (address: string) => {
    const parts = splitAddress(address);
    if (!parts || parts.domain !== inbox.domain) return { refusal: `this server takes mail only for @${inbox.domain}` };
    const agent = await agentOfLocalPart(knex, parts.local);
    return agent ? { agent } : { refusal: `no agent has the address ${address}` };
  };

  // Loaded here: a deployment without the Inbox's listener (CADRE_INBOX_SMTP_PORT unset) does not hold it.
  const { SMTPServer } = await import('smtp-server');
  const server = new SMTPServer({
    name: inbox.domain,
    banner: 'Cadre Inbox',
    size: inbox.maxBytes,
    authOptional: true,
    disabledCommands: inbox.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(inbox.tls ? { key: fs.readFileSync(inbox.tls.keyPath), cert: fs.readFileSync(inbox.tls.certPath) } : {}),
    logger: false,
    onRcptTo(address, _session, callback) {
      agentOf(address.address).then(
        (found) => callback(found.refusal ? smtpError(550, `5.1.1 ${found.refusal}`) : undefined),
        (err: Error) => {
          logger?.error({ err }, 'inbox: looking up a recipient failed');
          callback(smtpError(451, '4.3.0 the inbox cannot look up recipients right now; try again later'));
        },
      );
    },
    onData(stream, session: SMTPServerSession, callback) {
      const { mailFrom } = session.envelope;
      readMessage(stream, inbox.maxBytes)
        .then(async ({ raw, exceeded }) => {
          if (exceeded) throw new Refused(552, `5.3.4 the message is over the ${megabytes} MB this inbox takes`);
          const [mail, verdict] = await Promise.all([
            parseMessage(raw),
            verifyMessage(
              raw,
              {
                ip: session.remoteAddress,
                helo: session.hostNameAppearsAs,
                sender: mailFrom ? mailFrom.address : undefined,
                mta: inbox.domain,
                resolver,
              },
              (err) => logger?.warn({ err }, 'inbox: SPF/DKIM/DMARC verification gave up (recorded as temperror)'),
            ),
          ]);
          for (const rcpt of session.envelope.rcptTo) {
            const { agent } = await agentOf(rcpt.address);
            if (!agent) continue; // refused at RCPT TO; an agent deleted since then gets nothing
            const result = await receiveMail({ ...deps, domain: inbox.domain }, agent, mail, verdict);
            deliveries.inc({ source: 'mail', outcome: 'accepted' }); // stored in the agent's Inbox
            logger?.info(
              {
                agent_id: agent.id,
                outcome: result.outcome,
                run_id: 'runId' in result ? result.runId : undefined,
                spf: verdict.spf,
                dkim: verdict.dkim,
                dmarc: verdict.dmarc,
              },
              'inbox: message received',
            );
          }
          callback();
        })
        .catch((err: Error) => {
          if (err instanceof Refused) {
            deliveries.inc({ source: 'mail', outcome: 'rejected' });
            // The sender's mail, not the inbox, is at fault: a warning with the reason, never an error.
            logger?.warn(
              { code: err.responseCode, reason: err.message, from: mailFrom ? mailFrom.address : undefined },
              'inbox: message refused',
            );
            return callback(smtpError(err.responseCode, err.message));
          }
          deliveries.inc({ source: 'mail', outcome: 'failed' });
          logger?.error({ err }, 'inbox: storing a message failed');
          callback(smtpError(451, '4.3.0 the inbox could not store the message; try again later'));
        });
    },
  });
  server.on('error', (err) => logger?.warn({ err }, 'inbox: SMTP session error'));
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(inbox.smtpPort, inbox.smtpHost, () => resolve());
  });
  const address = server.server.address();
  return {
    port: typeof address === 'object' && address ? address.port : inbox.smtpPort,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
