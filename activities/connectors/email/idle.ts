// Waiting for mail with IMAP IDLE (RFC 2177): the server tells a client idling in a folder the moment a message
// arrives, so an email.received trigger starts its run within a second instead of at its next poll. The wait holds a
// connection of its own (IDLE occupies it), and says only that something arrived: the trigger's poll reads what, from
// its cursor, exactly as at an interval.
import type { ImapFlow } from 'imapflow';
import { imapFailure, login, type EmailConnection } from './imap';

export type MailboxWait =
  /** A message arrived (or had arrived since `uidNext` was seen) in the folder. */
  | { outcome: 'arrived'; uidNext: number }
  /** Nothing arrived within the wait. */
  | { outcome: 'quiet'; uidNext: number }
  /** The server has no IDLE: the trigger's interval polls are all there is. */
  | { outcome: 'unsupported' };

/** Servers end an IDLE after 30 minutes at the most, and many send nothing for minutes: the socket waits longer. */
const idleSocketTimeoutMs = 10 * 60_000;

/**
 * Idles in `folder` until a message arrives, `maxMs` pass or `signal` aborts (then it rejects with its reason). A
 * `uidNext` from an earlier wait that the folder has passed means mail arrived in between: answered at once.
 */
export async function waitForMail(
  c: EmailConnection,
  folder: string,
  opts: { uidNext?: number; maxMs: number; signal: AbortSignal; whenIdling?: (uidNext: number) => Promise<void> },
): Promise<MailboxWait> {
  let client: ImapFlow | undefined;
  try {
    client = await login(c, { socketTimeoutMs: idleSocketTimeoutMs });
    if (!client.capabilities.has('IDLE')) return { outcome: 'unsupported' };
    const box = await client.mailboxOpen(folder, { readOnly: true });
    if (opts.uidNext !== undefined && box.uidNext > opts.uidNext) return { outcome: 'arrived', uidNext: box.uidNext };
    const idling = client;
    const arrival = new Promise<'arrived'>((resolve) =>
      idling.on('exists', (e: { count: number; prevCount: number }) => e.count > e.prevCount && resolve('arrived')),
    );
    const dropped = new Promise<never>((_, reject) =>
      idling.once('close', () =>
        reject(Object.assign(new Error('the server closed the connection'), { code: 'NoConnection' })),
      ),
    );
    const aborted = new Promise<never>((_, reject) => {
      if (opts.signal.aborted) reject(opts.signal.reason);
      opts.signal.addEventListener('abort', () => reject(opts.signal.reason), { once: true });
    });
    // Raced below; until then (and after a logout closes the socket) a rejection must not go unheard.
    dropped.catch(() => undefined);
    aborted.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const quiet = new Promise<'quiet'>((resolve) => (timer = setTimeout(() => resolve('quiet'), opts.maxMs)));
    void idling.idle().catch(() => undefined); // ends when another command (the logout below) is sent
    await opts.whenIdling?.(box.uidNext);
    try {
      const outcome = await Promise.race([arrival, quiet, dropped, aborted]);
      // The folder's next UID as it is now: what a later wait compares with.
      const status = await idling.status(folder, { uidNext: true });
      return { outcome, uidNext: (status && status.uidNext) || box.uidNext };
    } finally {
      clearTimeout(timer);
    }
  } catch (err) {
    if (opts.signal.aborted) throw opts.signal.reason;
    throw imapFailure(c.config, err);
  } finally {
    await client?.logout().catch(() => client?.close());
  }
}
