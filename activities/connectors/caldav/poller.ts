// event.created and event.updated by polling. WebDAV sync (RFC 6578) answers which resources changed since a token,
// but not whether a change is a new event or an old one edited; so the cursor also holds a compact snapshot of the
// calendar: per resource, a 6-byte digest of its href and a 4-byte digest of its ETag (10 bytes an event; 10,000
// events make a cursor of about 130 KB). An href the snapshot lacks is created, a known one with another ETag is
// updated. When the server has no sync or refuses an old token, the full listing of ETags is compared with the
// snapshot instead (ctag-and-ETags sync), so nothing is missed either way.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { DAVResponse } from 'tsdav';
import type { EventBatch } from '../connector';
import { dav, sessionOf, type CaldavConnection, type CalendarSession } from './client';
import { calendarOf, mainEventOf } from './events';
import { propertyOf } from './ical';
import { whenOf } from './times';
import { storedObjects, type StoredObject } from './tools';

const HREF_BYTES = 6;
const ETAG_BYTES = 4;
const ENTRY = HREF_BYTES + ETAG_BYTES;
/** Objects fetched per calendar-multiget. */
const MULTIGET_BATCH = 100;

const digest = (text: string, bytes: number) =>
  createHash('sha256').update(text).digest().subarray(0, bytes).toString('hex');

const hrefKey = (href: string) => digest(decodeURIComponent(new URL(href, 'http://x').pathname), HREF_BYTES);

/** href digest → ETag digest. */
class Snapshot {
  constructor(readonly entries = new Map<string, string>()) {}

  static decode(base64: string): Snapshot {
    const bytes = Buffer.from(base64, 'base64');
    const entries = new Map<string, string>();
    for (let i = 0; i + ENTRY <= bytes.length; i += ENTRY)
      entries.set(
        bytes.subarray(i, i + HREF_BYTES).toString('hex'),
        bytes.subarray(i + HREF_BYTES, i + ENTRY).toString('hex'),
      );
    return new Snapshot(entries);
  }

  encode(): string {
    const keys = [...this.entries.keys()].sort();
    return Buffer.concat(keys.map((k) => Buffer.from(k + this.entries.get(k)!, 'hex'))).toString('base64');
  }

  has = (href: string) => this.entries.has(hrefKey(href));
  sameEtag = (href: string, etag: string) => this.entries.get(hrefKey(href)) === digest(etag, ETAG_BYTES);
  set = (href: string, etag: string) => this.entries.set(hrefKey(href), digest(etag, ETAG_BYTES));
  delete = (href: string) => this.entries.delete(hrefKey(href));
}

interface Cursor {
  v: 1;
  /** The calendar's sync token, when the server keeps one. */
  token?: string;
  seen: string;
}

const encodeCursor = (token: string | undefined, seen: Snapshot) =>
  JSON.stringify({ v: 1, ...(token ? { token } : {}), seen: seen.encode() } satisfies Cursor);

function decodeCursor(text: string): { token?: string; seen: Snapshot } | undefined {
  try {
    const c = JSON.parse(text) as Cursor;
    return c.v === 1 ? { token: c.token, seen: Snapshot.decode(c.seen) } : undefined;
  } catch {
    return undefined; // not one of ours: start over from now
  }
}

interface Member {
  href: string;
  etag: string;
}

const collectionPath = (href: string) => decodeURIComponent(new URL(href, 'http://x').pathname).replace(/\/?$/, '/');

/** A resource of the calendar, not the calendar itself (which PROPFIND lists too). */
const isMember = (s: CalendarSession, r: DAVResponse) =>
  r.href !== undefined && collectionPath(r.href) !== collectionPath(s.calendar.url);

const syncs = (s: CalendarSession) => s.calendar.reports?.includes('syncCollection') ?? false;

/** Every event resource of the calendar with its ETag, and the sync token of that state when there is one. */
async function listing(c: CaldavConnection, s: CalendarSession): Promise<{ members: Member[]; token?: string }> {
  const responses = syncs(s)
    ? await dav(c, 'read the calendar', () =>
        s.client.syncCollection({ url: s.calendar.url, props: { 'd:getetag': {} }, syncLevel: 1, syncToken: '' }),
      )
    : await dav(c, 'read the calendar', () =>
        s.client.propfind({ url: s.calendar.url, props: { 'd:getetag': {} }, depth: '1' }),
      );
  const members = responses
    .filter((r) => r.ok && isMember(s, r) && r.props?.getetag !== undefined)
    .map((r) => ({ href: r.href!, etag: String(r.props!.getetag) }));
  return { members, token: tokenOf(responses) };
}

const tokenOf = (responses: DAVResponse[]): string | undefined => {
  const token = (responses[0]?.raw as { multistatus?: { syncToken?: unknown } } | undefined)?.multistatus?.syncToken;
  return token === undefined || token === null ? undefined : String(token);
};

/** What changed since a sync token: undefined when the server no longer knows the token. */
async function syncSince(c: CaldavConnection, s: CalendarSession, token: string) {
  const responses = await dav(c, 'read changes to the calendar', () =>
    s.client.syncCollection({ url: s.calendar.url, props: { 'd:getetag': {} }, syncLevel: 1, syncToken: token }),
  );
  // RFC 6578 3.2: an unknown or expired token is refused with DAV:valid-sync-token (403, some servers 409 or 412).
  if (responses.length === 1 && !responses[0].ok && [403, 409, 412].includes(responses[0].status ?? 0))
    return undefined;
  const failed = responses.find((r) => !r.ok && r.status !== 404 && isMember(s, r));
  if (responses.length === 1 && !responses[0].ok && !failed)
    throw new Error(`the calendar's changes could not be read (${responses[0].status} ${responses[0].statusText})`);
  const members = responses.filter((r) => r.ok && isMember(s, r) && r.props?.getetag !== undefined);
  return {
    changed: members.map((r) => ({ href: r.href!, etag: String(r.props!.getetag) })),
    removed: responses.filter((r) => r.status === 404 && isMember(s, r)).map((r) => r.href!),
    token: tokenOf(responses) ?? token,
  };
}

/** The objects at `hrefs` with their data, in batches; one that is gone meanwhile is left out. */
async function fetchObjects(s: CalendarSession, hrefs: string[]): Promise<StoredObject[]> {
  const multiget = (batch: string[]) =>
    s.client.calendarMultiGet({
      url: s.calendar.url,
      props: { 'd:getetag': {}, 'c:calendar-data': {} },
      objectUrls: batch,
      depth: '1',
    });
  const objects: StoredObject[] = [];
  for (let i = 0; i < hrefs.length; i += MULTIGET_BATCH) {
    const batch = hrefs.slice(i, i + MULTIGET_BATCH);
    // tsdav fails the whole multiget when one href answers 404; then each is asked alone, and one that is gone is
    // left out. The guard's failures (credentials, server down) fail the poll, so its cursor stays where it was.
    const gone = (err: unknown): DAVResponse[] => {
      if (err instanceof ApplicationFailure) throw err;
      return [];
    };
    const responses = await multiget(batch).catch(async (err: unknown) => {
      gone(err);
      return (await Promise.all(batch.map((href) => multiget([href]).catch(gone)))).flat();
    });
    objects.push(...storedObjects(responses, s.calendar.url));
  }
  return objects;
}

/** When the object says it was made (CREATED) or last changed (LAST-MODIFIED, else DTSTAMP). */
function stampOf(ics: string, which: 'created' | 'updated'): string | undefined {
  try {
    const vevent = calendarOf(ics).components.find((x) => x.name === 'VEVENT');
    const names = which === 'created' ? ['CREATED', 'DTSTAMP'] : ['LAST-MODIFIED', 'DTSTAMP'];
    const prop = vevent && names.map((n) => propertyOf(vevent, n)).find(Boolean);
    const when = prop && whenOf(prop, 'UTC');
    return when && !when.allDay ? new Date(when.ms).toISOString() : undefined;
  } catch {
    return undefined;
  }
}

/** The events of kind `which` since the cursor, and the next cursor. */
export async function pollEvents(
  c: CaldavConnection,
  cursor: string | undefined,
  which: 'created' | 'updated',
): Promise<EventBatch> {
  const s = await sessionOf(c);
  const state = cursor === undefined ? undefined : decodeCursor(cursor);
  if (!state) {
    // A new trigger starts from now: what is there is the snapshot, and nothing is reported.
    const now = await listing(c, s);
    const seen = new Snapshot();
    for (const m of now.members) seen.set(m.href, m.etag);
    return { events: [], cursor: encodeCursor(now.token, seen) };
  }
  const { seen } = state;
  let delta: { changed: Member[]; removed: string[]; token?: string } | undefined =
    state.token && syncs(s) ? await syncSince(c, s, state.token) : undefined;
  if (!delta) {
    const now = await listing(c, s);
    const present = new Set(now.members.map((m) => hrefKey(m.href)));
    for (const key of [...seen.entries.keys()]) if (!present.has(key)) seen.entries.delete(key);
    delta = { changed: now.members, removed: [], token: now.token };
  }
  for (const href of delta.removed) seen.delete(href);
  const news = delta.changed.filter((m) => !seen.sameEtag(m.href, m.etag));
  const wanted = news.filter((m) => seen.has(m.href) === (which === 'updated'));
  for (const m of news) seen.set(m.href, m.etag);
  const zone = c.config.timezone;
  const events: EventBatch['events'] = [];
  const objects = await fetchObjects(
    s,
    wanted.map((m) => m.href),
  );
  for (const object of objects) {
    // The ETag read with the data is the version reported; the next poll then does not report it again.
    if (object.etag) seen.set(object.url, object.etag);
    let event;
    try {
      event = mainEventOf(object.data, zone);
    } catch {
      continue; // an object another app wrote that cannot be read is no event to start a run on
    }
    if (!event) continue;
    const uid = event.uid || new URL(object.url).pathname;
    events.push({
      id: which === 'created' ? uid : `${uid}@${object.etag ?? stampOf(object.data, 'updated') ?? ''}`,
      occurred_at: stampOf(object.data, which),
      data: { ...event, calendar: s.name, url: object.url },
    });
  }
  events.sort((a, b) => (a.occurred_at ?? '').localeCompare(b.occurred_at ?? ''));
  return { events, cursor: encodeCursor(delta.token, seen) };
}
