// A signed-in tsdav client and the calendar a connection uses, kept per connection version. Every request tsdav
// makes goes through serverFetch: only to the configured server's origin (a server's answer could name another
// host, and discovery follows it), only to an address the SSRF guard allows, never following a redirect, with a
// timeout; 429 waits as Retry-After says (within bounds) and answers the caller reads as failures become ones a
// person can act on. tsdav leaves most HTTP errors in its answers, so this one place sees them all.
import { ApplicationFailure } from '@temporalio/common';
import type { DAVCalendar, DAVClient } from 'tsdav';
import type { caldavConnector } from '../../../model/connectors/caldav';
import { BlockedAddressError, publicFetch } from '../../tools/ssrf-guard';
import { clientCache, type OpenedConnection } from '../connector';

export type CaldavConnection = OpenedConnection<typeof caldavConnector>;

export interface CalendarSession {
  client: DAVClient;
  calendar: DAVCalendar;
  calendars: DAVCalendar[];
  /** The calendar's name as the account shows it. */
  name: string;
  /** fetch to the connection's server, guarded (for the requests tsdav has no call for). */
  fetch: typeof fetch;
  /** What the server calls itself (its Server header), for the connection test. */
  server?: string;
}

/** A failure a retry cannot fix: settings, credentials, permissions, the request. */
export const refused = (message: string, type = 'CalendarRefused') => ApplicationFailure.nonRetryable(message, type);
/** A passing fault: the server unreachable, busy or failing. */
export const passing = (message: string, type = 'CalendarUnavailable') => ApplicationFailure.retryable(message, type);

/** How messages name the connection: by name in a run, as "the calendar" while it is being made or tested. */
export const nameOf = (c: CaldavConnection) =>
  c.version.startsWith('check:') ? 'the calendar' : `connection "${c.name}"`;

const REQUEST_TIMEOUT_MS = 30_000;
const RATE_LIMIT_RETRIES = 3;
const LONGEST_RATE_LIMIT_WAIT_MS = 30_000;

function retryAfterMs(res: Response): number {
  const header = res.headers.get('retry-after');
  if (!header) return 1000;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? 1000 : Math.max(0, at - Date.now());
}

function networkReason(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

/** One request to the connection's server: allowed address, timeout, 429 waited out, failures as messages. */
async function guardedRequest(
  c: CaldavConnection,
  base: URL,
  url: URL,
  init: RequestInit | undefined,
  seen: { server?: string },
): Promise<Response> {
  if (url.origin !== base.origin)
    throw refused(
      `the calendar server pointed to ${url.origin}, but ${nameOf(c)} reaches only ${base.origin}: ` +
        'give the address the calendar is served from',
      'CalendarElsewhere',
    );
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await publicFetch(c.limits.allowHosts ?? [])(url, {
        ...init,
        redirect: 'manual',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      if (err instanceof BlockedAddressError) throw refused(err.message, 'BlockedAddress');
      throw passing(`could not reach ${base.host}: ${networkReason(err)}`, 'CalendarUnreachable');
    }
    seen.server ??= res.headers.get('server') ?? undefined;
    if (res.status === 429 && attempt < RATE_LIMIT_RETRIES) {
      const wait = retryAfterMs(res);
      if (wait <= LONGEST_RATE_LIMIT_WAIT_MS) {
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, wait));
        continue;
      }
    }
    if (res.status === 401)
      throw refused(
        `${base.host} refused the user name or password of ${nameOf(c)} (401): check them and reconnect it in Integrations`,
        'CalendarUnauthorized',
      );
    if (res.status === 429)
      throw passing(
        `${base.host} is limiting requests (429 Too Many Requests); try again later`,
        'CalendarRateLimited',
      );
    if (res.status >= 500)
      throw passing(`${base.host} failed (${res.status} ${res.statusText}); try again later`, 'CalendarServerError');
    return res;
  }
}

const MAX_REDIRECTS = 3;

export function serverFetch(c: CaldavConnection, base: URL, seen: { server?: string }): typeof fetch {
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    // tsdav's discovery reads redirects itself (redirect: 'manual'); other requests follow those within the server,
    // checked like the first, and a redirect elsewhere (http to https, another host) says which address to give.
    const follow = init?.redirect !== 'manual';
    for (let hops = 0; ; hops++) {
      const res = await guardedRequest(c, base, url, init, seen);
      const location = follow && [301, 302, 303, 307, 308].includes(res.status) ? res.headers.get('location') : null;
      if (!location || hops >= MAX_REDIRECTS) return res;
      const next = new URL(location, url);
      await res.body?.cancel();
      if (next.origin !== base.origin)
        throw refused(
          `${url.href} redirects to ${next.origin}${next.pathname}: give that as the server address of ${nameOf(c)}`,
          'CalendarRedirected',
        );
      url = next;
    }
  };
}

const pathOf = (url: string) => {
  const p = decodeURIComponent(new URL(url).pathname);
  return p.endsWith('/') ? p : `${p}/`;
};

export const calendarName = (cal: DAVCalendar) => {
  const name = cal.displayName as unknown;
  if (typeof name === 'string' || typeof name === 'number') return String(name);
  return pathOf(cal.url).split('/').filter(Boolean).pop() ?? cal.url;
};

/** The calendar the settings name (by name or address), else the one the server URL points at, else the first. */
function chooseCalendar(c: CaldavConnection, calendars: DAVCalendar[], base: URL): DAVCalendar {
  const wanted = c.config.calendar?.trim();
  if (calendars.length === 0)
    throw refused(`the account ${c.config.username} has no calendars for events: make one in your calendar app first`);
  if (!wanted) return calendars.find((cal) => pathOf(cal.url) === pathOf(base.href)) ?? calendars[0];
  const byAddress = /^https?:\/\//i.test(wanted) || wanted.startsWith('/');
  const found = byAddress
    ? calendars.find((cal) => pathOf(cal.url) === pathOf(new URL(wanted, base).href))
    : calendars.find((cal) => calendarName(cal).trim().toLowerCase() === wanted.toLowerCase());
  if (!found)
    throw refused(
      `the account ${c.config.username} has no calendar "${wanted}"; it has ${calendars.map((cal) => `"${calendarName(cal)}"`).join(', ')}`,
      'CalendarNotFound',
    );
  return found;
}

async function openSession(c: CaldavConnection): Promise<CalendarSession> {
  const base = new URL(c.config.server_url);
  const seen: { server?: string } = {};
  const guarded = serverFetch(c, base, seen);
  const { DAVClient } = await import('tsdav'); // loaded on first use
  const client = new DAVClient({
    serverUrl: base.href,
    credentials: { username: c.config.username, password: c.credentials.password },
    authMethod: 'Basic',
    defaultAccountType: 'caldav',
    fetch: guarded,
  });
  let calendars: DAVCalendar[];
  try {
    await client.login();
    calendars = await client.fetchCalendars();
  } catch (err) {
    if (err instanceof ApplicationFailure) throw err;
    if (/Latin1/i.test((err as Error).message))
      throw refused(
        'the user name or password holds characters Basic authentication cannot carry (beyond Latin-1): ' +
          'use an app password',
        'CalendarUnauthorized',
      );
    // tsdav's own words ("cannot find homeUrl"): discovery found no CalDAV account there.
    throw refused(
      `found no CalDAV calendars for ${c.config.username} at ${base.href} (${(err as Error).message.split('\n')[0].slice(0, 200)}): ` +
        'check the server address; some servers need their CalDAV path, such as /remote.php/dav',
      'CalendarNotFound',
    );
  }
  const calendar = chooseCalendar(c, calendars, base);
  return { client, calendar, calendars, name: calendarName(calendar), fetch: guarded, server: seen.server };
}

const sessions = clientCache<CalendarSession>(() => undefined);
/** A session for a check: opened for it alone, not kept. */
export const checkSession = openSession;
export const sessionOf = (c: CaldavConnection) => sessions(c.version, () => openSession(c));

/**
 * Runs a tsdav call, turning what it throws for an answer it did not expect (a 403, 404, bad XML) into a message
 * about what was being done; the guard's own failures pass as they are.
 */
export async function dav<T>(c: CaldavConnection, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ApplicationFailure) throw err;
    const reason = (err as Error).message
      .split('\n')[0]
      .replace(/Raw response:.*/, '')
      .trim()
      .slice(0, 300);
    throw refused(`${nameOf(c)} could not ${what}: ${reason}`, 'CalendarRequestFailed');
  }
}

/** A failed write's answer as a message: the server's reason, shortened. */
export async function writeRefused(c: CaldavConnection, what: string, res: Response): Promise<ApplicationFailure> {
  const body = (await res.text().catch(() => '')).replace(/\s+/g, ' ').trim().slice(0, 300);
  const hint =
    res.status === 403
      ? ': the account may not write to this calendar'
      : res.status === 404
        ? ': the calendar is gone; check the connection settings'
        : '';
  return refused(
    `${nameOf(c)} could not ${what}: the server answered ${res.status} ${res.statusText}${hint}${body ? ` (${body})` : ''}`,
    'CalendarWriteRefused',
  );
}
