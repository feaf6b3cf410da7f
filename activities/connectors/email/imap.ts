// The IMAP side of an email connection, with imapflow: one logged-in client per connection version, kept while it is
// used (imapflow's mailbox lock lets one call at a time work in a folder) and logged in again when the server has
// dropped it. Failures become messages a person can act on, split into what a retry can fix and what it cannot.
import net from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import type { ImapFlow, ImapFlowError } from 'imapflow';
import type { emailConnector, EmailConfig } from '../../../model/connectors/email';
import { BlockedAddressError, publicAddress } from '../../tools/ssrf-guard';
import { clientCache, type OpenedConnection } from '../connector';

export type EmailConnection = OpenedConnection<typeof emailConnector>;

export const imapPort = (config: EmailConfig) => config.imap.port ?? (config.imap.secure ? 993 : 143);
const imapServer = (config: EmailConfig) => `the IMAP server ${config.imap.host}:${imapPort(config)}`;

/** A failure a retry cannot fix: the settings, the password, a folder or message that is not there. */
export const refused = (message: string, type = 'EmailRefused') => ApplicationFailure.nonRetryable(message, type);

const passingCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'GREETING_TIMEOUT',
  'UPGRADE_TIMEOUT',
  'ETIMEOUT',
  'NoConnection',
  'EConnectionClosed',
  'ClosedAfterConnectText',
  'ClosedAfterConnectTLS',
  'LockTimeout',
  'ETHROTTLE',
]);

/** What an imapflow error means for the person who set the connection up, and whether trying again may help. */
export function imapFailure(config: EmailConfig, err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof BlockedAddressError) return refused(err.message, 'BlockedAddress');
  const e = err as ImapFlowError;
  const server = imapServer(config);
  if (e.authenticationFailed)
    return refused(
      `${server} refused the login of ${config.imap.user}: check the user and password (an app password where the ` +
        'provider asks for one) and reconnect it in Integrations',
      'EmailLoginRefused',
    );
  if (e.tlsFailed || /certificate|SSL|TLS/i.test(e.message ?? ''))
    return refused(`TLS with ${server} failed (${e.message}): check its port and the TLS setting`, 'EmailTls');
  if (e.code === 'ENOTFOUND') return refused(`${server} does not exist (no such host): check the host name`);
  if (e.code && passingCodes.has(e.code))
    return ApplicationFailure.retryable(`${server} could not be reached (${e.code}): ${e.message}`, 'EmailUnreachable');
  if (e.responseStatus === 'NO' || e.responseStatus === 'BAD')
    return refused(`${server} refused ${e.command ?? 'the command'}: ${e.responseText ?? e.message}`);
  return ApplicationFailure.retryable(`${server}: ${e.message ?? String(err)}`, 'EmailFailed');
}

/**
 * Without TLS from the start, the password may only cross a STARTTLS-upgraded connection, except to a host the
 * operator lists in CADRE_HTTP_ALLOW_HOSTS (a relay on the local network).
 */
export const mustUpgrade = (host: string, allowHosts: readonly string[]) =>
  !allowHosts.map((h) => h.toLowerCase()).includes(host.toLowerCase());

/** A client logged in to the connection's IMAP server (the caller logs it out). */
export async function login(c: EmailConnection, opts: { socketTimeoutMs?: number } = {}): Promise<ImapFlow> {
  const { imap } = c.config;
  const { ImapFlow } = await import('imapflow'); // loaded on first use
  const client = new ImapFlow({
    // The checked address, never resolved again; TLS checks the certificate against the host's name.
    host: await publicAddress(imap.host, imapPort(c.config), c.limits.allowHosts),
    servername: net.isIP(imap.host) ? undefined : imap.host,
    port: imapPort(c.config),
    secure: imap.secure,
    doSTARTTLS: imap.secure ? undefined : mustUpgrade(imap.host, c.limits.allowHosts) || undefined,
    auth: { user: imap.user, pass: c.credentials.password },
    logger: false, // its debug log would carry message contents
    disableAutoIdle: true, // a kept client is closed when idle, not held open with IDLE
    connectionTimeout: 20_000,
    greetingTimeout: 15_000,
    socketTimeout: opts.socketTimeoutMs ?? 120_000,
    clientInfo: { name: 'Cadre' },
  });
  // A dropped connection is noticed on the next call (client.usable); an unheard 'error' event would end the worker.
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** A connection's mailbox: a client logged in once and again whenever the server has closed it. */
class Mailbox {
  private client?: Promise<ImapFlow>;
  constructor(private readonly c: EmailConnection) {}

  async open(): Promise<ImapFlow> {
    const current = this.client && (await this.client.catch(() => undefined));
    if (current?.usable) return current;
    const opening = login(this.c);
    this.client = opening;
    opening.catch(() => this.client === opening && (this.client = undefined));
    return opening;
  }

  async close() {
    const client = await this.client?.catch(() => undefined);
    this.client = undefined;
    await client?.logout().catch(() => client.close());
  }
}

const mailboxes = clientCache<Mailbox>((m) => m.close());

/** The logged-in client of the connection (kept between calls), for what needs no folder. */
export async function imapClient(c: EmailConnection): Promise<ImapFlow> {
  try {
    const mailbox = await mailboxes(c.version, async () => new Mailbox(c));
    return await mailbox.open();
  } catch (err) {
    throw imapFailure(c.config, err);
  }
}

/** Runs `work` with `folder` selected, one call at a time per client (imapflow's mailbox lock). */
export async function inFolder<T>(
  c: EmailConnection,
  folder: string,
  work: (client: ImapFlow) => Promise<T>,
): Promise<T> {
  const client = await imapClient(c);
  let lock;
  try {
    lock = await client.getMailboxLock(folder);
  } catch (err) {
    const e = err as ImapFlowError;
    if (e.mailboxMissing || e.serverResponseCode === 'NONEXISTENT' || e.responseStatus === 'NO')
      throw refused(`the mailbox ${c.config.imap.user} has no folder "${folder}"${await folderHint(client)}`);
    throw imapFailure(c.config, err);
  }
  try {
    // A folder the kept client already had open shows what other sessions did only after it next syncs.
    await client.noop();
    return await work(client);
  } catch (err) {
    throw imapFailure(c.config, err);
  } finally {
    lock.release();
  }
}

/** The folders of the mailbox, by path. */
export async function folderPaths(client: ImapFlow): Promise<string[]> {
  return (await client.list()).map((f) => f.path).sort();
}

async function folderHint(client: ImapFlow): Promise<string> {
  const paths = await folderPaths(client).catch(() => []);
  return paths.length > 0 ? ` (it has ${paths.slice(0, 30).join(', ')})` : '';
}

/** The folder the server marks as where sent mail is kept (RFC 6154 \Sent), if any. */
export async function sentFolderOf(client: ImapFlow): Promise<string | undefined> {
  return (await client.list()).find((f) => f.specialUse === '\\Sent')?.path;
}
