// The Inbox's own SMTP server: takes mail for the agents' addresses (<local part>@CADRE_INBOX_DOMAIN) and hands
// each message to the intake. It runs in the web process, beside the API: it needs only the database and the run
// service. Refusals are made while the sender is still connected, so it learns why: an unknown recipient at RCPT
// TO (550), a message over the size limit at MAIL FROM (its SIZE) or at the end of DATA (552). Each message it takes
// gets Cadre's own SPF/DKIM/DMARC verdict (./authentication.ts), recorded beside it and never a reason to refuse it.
import fs from 'node:fs';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { simpleParser } from 'mailparser';
import { agentOfLocalPart } from '../../db/inbox';
import { splitAddress } from '../../model/inbox';
import type { CadreConfig } from '../../cadre.config';
import { receiveMail, type IntakeDeps } from './intake';
import { verifyMessage, type DnsResolver } from './authentication';

export interface InboxListener {
  port: number;
  close(): Promise<void>;
}

const smtpError = (responseCode: number, message: string) => Object.assign(new Error(message), { responseCode });

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
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
      readAll(stream)
        .then(async (raw) => {
          if (stream.sizeExceeded)
            return callback(smtpError(552, `5.3.4 the message is over the ${megabytes} MB this inbox takes`));
          const { mailFrom } = session.envelope;
          const [mail, verdict] = await Promise.all([
            simpleParser(raw),
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
