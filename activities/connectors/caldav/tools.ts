// The calendar tools over CalDAV (RFC 4791) with tsdav. Writes are safe to repeat: a created event's UID and
// resource name come from the step's idempotency key and the PUT says If-None-Match: *, so a retried step finds its
// event instead of adding a second; changes PUT with If-Match on the ETag read, so a change made meanwhile by
// someone else is read again rather than overwritten; a change or cancellation already in place writes nothing.
import { createHash } from 'node:crypto';
import type { DAVResponse } from 'tsdav';
import type { ToolContext } from '../../tools/tool-context';
import {
  dav,
  nameOf,
  passing,
  refused,
  sessionOf,
  writeRefused,
  type CaldavConnection,
  type CalendarSession,
} from './client';
import {
  cancelEvent,
  changeEvent,
  EventDataError,
  mainEventOf,
  newEventObject,
  parseAttendee,
  timedEventsOf,
  type CalendarEvent,
  type EventFields,
  type TimedEvent,
} from './events';
import { IcalSyntaxError, parseIcal, propertiesOf, type IcalProperty } from './ical';
import { durationMs, formatInZone, icalUtc, parseWhen, startOfDate, TimeInputError, type When } from './times';

/** More events than this in one answer fail and ask for a shorter period rather than being cut silently. */
const MOST_EVENTS = 1000;
/** How often a change is read again when the event changed between reading and writing it. */
const CONFLICT_ATTEMPTS = 3;

/** Turns what the inputs or the stored event get wrong into a failure a retry cannot fix. */
async function caught<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof EventDataError || err instanceof TimeInputError || err instanceof IcalSyntaxError)
      throw refused(err.message, 'CalendarInvalidEvent');
    throw err;
  }
}

export interface StoredObject {
  url: string;
  etag?: string;
  data: string;
}

const dataOf = (r: DAVResponse): unknown => r.props?.calendarData?._cdata ?? r.props?.calendarData;

export function storedObjects(responses: DAVResponse[], calendarUrl: string): StoredObject[] {
  return responses
    .filter((r) => r.href && typeof dataOf(r) === 'string')
    .map((r) => ({
      url: new URL(r.href!, calendarUrl).href,
      etag: r.props?.getetag === undefined ? undefined : String(r.props.getetag),
      data: dataOf(r) as string,
    }));
}

const eventFilter = (inner: Record<string, unknown>) => [
  {
    'comp-filter': { _attributes: { name: 'VCALENDAR' }, 'comp-filter': { _attributes: { name: 'VEVENT' }, ...inner } },
  },
];

/** The object holding the event `uid` (a calendar-query on UID), or undefined. */
async function objectByUid(c: CaldavConnection, s: CalendarSession, uid: string): Promise<StoredObject | undefined> {
  const responses = await dav(c, `look up event ${uid}`, () =>
    s.client.calendarQuery({
      url: s.calendar.url,
      props: { 'd:getetag': {}, 'c:calendar-data': {} },
      filters: eventFilter({
        'prop-filter': {
          _attributes: { name: 'UID' },
          'text-match': { _attributes: { collation: 'i;octet' }, _text: uid },
        },
      }),
      depth: '1',
    }),
  );
  // text-match is a substring match: the UID must be the one asked for.
  const uidOf = (o: StoredObject) => {
    try {
      return mainEventOf(o.data, 'UTC')?.uid;
    } catch {
      return undefined; // another object that only contains the text, and cannot be read
    }
  };
  return storedObjects(responses, s.calendar.url).find((o) => uidOf(o) === uid);
}

/** The period of a tool's from/to as instants. */
function periodOf(input: { from: string; to: string }, zone: string) {
  const instant = (w: When) => (w.allDay ? startOfDate(w.date, zone) : w.ms);
  const from = instant(parseWhen('from', input.from, zone));
  const to = instant(parseWhen('to', input.to, zone));
  if (to <= from) throw new TimeInputError('"to" must come after "from"');
  return { from, to };
}

/** Events overlapping [from, to), each occurrence of a recurring one expanded by the server. */
export async function eventsBetween(c: CaldavConnection, s: CalendarSession, from: number, to: number) {
  const range = { _attributes: { start: icalUtc(from), end: icalUtc(to) } };
  const responses = await dav(c, 'list events', () =>
    s.client.calendarQuery({
      url: s.calendar.url,
      props: { 'd:getetag': {}, 'c:calendar-data': { 'c:expand': range } },
      filters: eventFilter({ 'c:time-range': range }),
      depth: '1',
    }),
  );
  const zone = c.config.timezone;
  const events: TimedEvent[] = [];
  const unreadable: { url: string; reason: string }[] = [];
  for (const o of storedObjects(responses, s.calendar.url)) {
    try {
      events.push(...timedEventsOf(o.data, zone));
    } catch (err) {
      // One object another app wrote badly must not hide the rest of the calendar.
      unreadable.push({ url: o.url, reason: (err as Error).message });
    }
  }
  // A server that does not expand answers a recurring series whole: it is kept, as the series.
  const overlapping = events.filter(
    (e) =>
      (e.startMs < to && e.endMs > from) ||
      (e.startMs === e.endMs && e.startMs >= from && e.startMs < to) ||
      (e.event.recurring && !e.event.recurrence_id),
  );
  overlapping.sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs);
  return { events: overlapping, unreadable };
}

async function listEvents(input: { from: string; to: string; include_cancelled: boolean }, c: CaldavConnection) {
  const zone = c.config.timezone;
  const { from, to } = periodOf(input, zone);
  const s = await sessionOf(c);
  const { events, unreadable } = await eventsBetween(c, s, from, to);
  const listed = events.filter((e) => input.include_cancelled || e.event.status !== 'CANCELLED').map((e) => e.event);
  if (listed.length > MOST_EVENTS)
    throw refused(`the period holds more than ${MOST_EVENTS} events: ask for a shorter one`, 'CalendarTooManyEvents');
  return {
    calendar: s.name,
    timezone: zone,
    from: formatInZone(from, zone),
    to: formatInZone(to, zone),
    events: listed,
    count: listed.length,
    ...(unreadable.length ? { unreadable } : {}),
  };
}

/** The event's uid for a step: the same for every retry of the step, different for every other step. */
export const uidFor = (idempotencyKey: string) =>
  `cadre-${createHash('sha256').update(`caldav-event:${idempotencyKey}`).digest('hex').slice(0, 40)}`;

/** The mailto address events with attendees name as their organizer: the account's, or its user name if an address. */
async function organizerOf(c: CaldavConnection, s: CalendarSession): Promise<string | undefined> {
  const addresses = s.client.account
    ? await s.client.fetchCalendarUserAddresses({ account: s.client.account }).catch(() => [] as string[])
    : [];
  const mail = addresses.find((a) => /^mailto:/i.test(a));
  if (mail) return mail.replace(/^mailto:/i, '');
  return /^[^@\s]+@[^@\s]+$/.test(c.config.username) ? c.config.username : undefined;
}

function fieldsOf(
  input: {
    summary?: string;
    start?: string;
    end?: string;
    location?: string;
    description?: string;
    attendees?: string[];
  },
  zone: string,
): EventFields {
  return {
    summary: input.summary,
    start: input.start === undefined ? undefined : parseWhen('start', input.start, zone),
    end: input.end === undefined ? undefined : parseWhen('end', input.end, zone),
    location: input.location,
    description: input.description,
    attendees: input.attendees?.map(parseAttendee),
  };
}

async function createEvent(
  input: { summary: string; start: string; end: string; location?: string; description?: string; attendees?: string[] },
  c: CaldavConnection,
  ctx: ToolContext,
) {
  const zone = c.config.timezone;
  const fields = fieldsOf(input, zone) as Parameters<typeof newEventObject>[1];
  const s = await sessionOf(c);
  const uid = uidFor(ctx.idempotencyKey);
  const filename = `${uid}.ics`;
  const organizer = fields.attendees?.length ? await organizerOf(c, s) : undefined;
  const ics = newEventObject(uid, fields, Date.now(), organizer);
  const url = new URL(filename, s.calendar.url.endsWith('/') ? s.calendar.url : `${s.calendar.url}/`).href;
  const res = await dav(c, 'create the event', () =>
    s.client.createCalendarObject({ calendar: s.calendar, iCalString: ics, filename }),
  );
  // 412: If-None-Match found the resource, so an earlier try of this same step created it.
  if (res.status === 412) {
    const existing = await objectByUid(c, s, uid);
    if (existing) return { uid, url, created: false, event: mainEventOf(existing.data, zone) };
  }
  if (!res.ok) throw await writeRefused(c, `create the event in calendar "${s.name}"`, res);
  return { uid, url, created: true, event: mainEventOf(ics, zone) };
}

/**
 * Reads the event, applies `change` to its object and PUTs it with If-Match; a 412 (changed meanwhile) reads it
 * again. `change` answers undefined when there is nothing to write.
 */
async function rewrite(
  c: CaldavConnection,
  uid: string,
  what: string,
  change: (ics: string) => string | undefined,
): Promise<{ object: StoredObject; written: boolean; session: CalendarSession }> {
  const s = await sessionOf(c);
  for (let attempt = 0; attempt < CONFLICT_ATTEMPTS; attempt++) {
    const object = await objectByUid(c, s, uid);
    if (!object)
      throw refused(`calendar "${s.name}" of ${nameOf(c)} has no event with uid "${uid}"`, 'CalendarEventNotFound');
    const data = change(object.data);
    if (data === undefined) return { object, written: false, session: s };
    const res = await dav(c, what, () =>
      s.client.updateCalendarObject({ calendarObject: { url: object.url, etag: object.etag, data } }),
    );
    if (res.ok) return { object: { ...object, data }, written: true, session: s };
    if (res.status !== 412) throw await writeRefused(c, `${what} in calendar "${s.name}"`, res);
  }
  throw passing(`event ${uid} kept changing while it was being written; try again`, 'CalendarEventConflict');
}

async function updateEvent(
  input: {
    uid: string;
    summary?: string;
    start?: string;
    end?: string;
    location?: string;
    description?: string;
    attendees?: string[];
  },
  c: CaldavConnection,
) {
  const zone = c.config.timezone;
  const fields = fieldsOf(input, zone);
  if (Object.values(fields).every((v) => v === undefined))
    throw refused('give at least one field to change (summary, start, end, location, description, attendees)');
  let changed: string[] = [];
  const { object } = await rewrite(c, input.uid, `update event ${input.uid}`, (ics) => {
    const result = changeEvent(ics, fields, zone, Date.now());
    changed = result.changed;
    return result.changed.length ? result.ics : undefined;
  });
  return { uid: input.uid, changed, event: mainEventOf(object.data, zone) };
}

async function cancel(input: { uid: string }, c: CaldavConnection) {
  const { object, written } = await rewrite(c, input.uid, `cancel event ${input.uid}`, (ics) =>
    cancelEvent(ics, Date.now()),
  );
  return {
    uid: input.uid,
    status: 'CANCELLED',
    already_cancelled: !written,
    event: mainEventOf(object.data, c.config.timezone),
  };
}

interface Interval {
  start: number;
  end: number;
}

/** Sorted, with overlapping and touching intervals joined, and clipped to the period. */
export function mergeIntervals(intervals: Interval[], from: number, to: number): Interval[] {
  const sorted = intervals
    .map((i) => ({ start: Math.max(i.start, from), end: Math.min(i.end, to) }))
    .filter((i) => i.end > i.start)
    .sort((a, b) => a.start - b.start);
  const merged: Interval[] = [];
  for (const i of sorted) {
    const last = merged[merged.length - 1];
    if (last && i.start <= last.end) last.end = Math.max(last.end, i.end);
    else merged.push({ ...i });
  }
  return merged;
}

/** FREEBUSY periods (start/end or start/duration, comma-separated) that are not FREE. */
function busyPeriods(props: IcalProperty[]): Interval[] {
  const utc = (v: string) => {
    const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(v);
    if (!m) throw new EventDataError(`a free/busy time "${v}" is not in UTC`);
    return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  };
  return props
    .filter((p) => (p.params.FBTYPE ?? 'BUSY').toUpperCase() !== 'FREE')
    .flatMap((p) => p.value.split(','))
    .map((period) => {
      const [a, b] = period.split('/');
      const start = utc(a);
      return { start, end: /^[+-]?P/.test(b) ? start + durationMs(b) : utc(b) };
    });
}

/** The server's free-busy-query REPORT (RFC 4791 7.10); undefined when it does not answer one. */
async function serverFreeBusy(c: CaldavConnection, s: CalendarSession, from: number, to: number) {
  const body =
    '<?xml version="1.0" encoding="utf-8"?>' +
    '<C:free-busy-query xmlns:C="urn:ietf:params:xml:ns:caldav">' +
    `<C:time-range start="${icalUtc(from)}" end="${icalUtc(to)}"/></C:free-busy-query>`;
  // tsdav's freeBusyQuery keeps only the first 4 KB of a text/calendar answer: the REPORT is sent here instead.
  const res = await s.fetch(s.calendar.url, {
    method: 'REPORT',
    headers: { ...s.client.authHeaders, Depth: '1', 'Content-Type': 'application/xml; charset=utf-8' },
    body,
  });
  const text = await res.text();
  if (!res.ok || !/BEGIN:VCALENDAR/i.test(text)) return undefined;
  const freebusy = parseIcal(text)
    .flatMap((cal) => cal.components)
    .filter((comp) => comp.name === 'VFREEBUSY');
  return busyPeriods(freebusy.flatMap((fb) => propertiesOf(fb, 'FREEBUSY')));
}

async function freeBusy(input: { from: string; to: string }, c: CaldavConnection) {
  const zone = c.config.timezone;
  const { from, to } = periodOf(input, zone);
  const s = await sessionOf(c);
  let intervals = s.calendar.reports?.includes('freeBusyQuery') ? await serverFreeBusy(c, s, from, to) : undefined;
  // Without the REPORT, busy is what the events say: not cancelled, not transparent.
  intervals ??= (await eventsBetween(c, s, from, to)).events
    .filter((e) => e.event.status !== 'CANCELLED' && !e.transparent)
    .map((e) => ({ start: e.startMs, end: e.endMs }));
  return {
    calendar: s.name,
    timezone: zone,
    from: formatInZone(from, zone),
    to: formatInZone(to, zone),
    busy: mergeIntervals(intervals, from, to).map((i) => ({
      start: formatInZone(i.start, zone),
      end: formatInZone(i.end, zone),
    })),
  };
}

export const calendarHandlers = {
  listEvents: (input: Parameters<typeof listEvents>[0], c: CaldavConnection) => caught(() => listEvents(input, c)),
  createEvent: (input: Parameters<typeof createEvent>[0], c: CaldavConnection, ctx: ToolContext) =>
    caught(() => createEvent(input, c, ctx)),
  updateEvent: (input: Parameters<typeof updateEvent>[0], c: CaldavConnection) => caught(() => updateEvent(input, c)),
  cancelEvent: (input: Parameters<typeof cancel>[0], c: CaldavConnection) => caught(() => cancel(input, c)),
  freeBusy: (input: Parameters<typeof freeBusy>[0], c: CaldavConnection) => caught(() => freeBusy(input, c)),
};

export type { CalendarEvent };
