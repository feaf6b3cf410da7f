// Events as agents see them, read from and written into iCalendar objects (ical.ts, times.ts). A changed event is
// the object as read with only the changed properties replaced, its SEQUENCE raised (RFC 5545 3.8.7.4) so calendar
// apps and attendees take the new version over the old.
import {
  escapeText,
  parseIcal,
  propertiesOf,
  propertyOf,
  serializeIcal,
  setProperties,
  setProperty,
  setText,
  textOf,
  unescapeText,
  type IcalComponent,
  type IcalProperty,
} from './ical';
import { addDays, durationMs, formatWhen, ianaZoneOf, icalUtc, icalWhen, whenMs, whenOf, type When } from './times';

export interface Attendee {
  email: string;
  name?: string;
  /** PARTSTAT: NEEDS-ACTION, ACCEPTED, DECLINED, TENTATIVE. */
  status?: string;
}

export interface CalendarEvent {
  uid: string;
  summary: string | null;
  start: string;
  end: string;
  all_day: boolean;
  location: string | null;
  description: string | null;
  attendees: Attendee[];
  organizer: string | null;
  /** CONFIRMED, TENTATIVE or CANCELLED; null when the event does not say. */
  status: string | null;
  /** Which occurrence of a recurring event this is. */
  recurrence_id?: string;
  recurring: boolean;
}

/** An event with the instants it spans, for ordering and free/busy. */
export interface TimedEvent {
  event: CalendarEvent;
  startMs: number;
  endMs: number;
  transparent: boolean;
}

export class EventDataError extends Error {}

const mailto = (value: string) => value.replace(/^mailto:/i, '');

function attendeeOf(p: IcalProperty): Attendee {
  return {
    email: mailto(p.value),
    ...(p.params.CN ? { name: p.params.CN } : {}),
    ...(p.params.PARTSTAT ? { status: p.params.PARTSTAT.toUpperCase() } : {}),
  };
}

/** "Ann Lee <ann@example.com>" or "ann@example.com". */
export function parseAttendee(text: string): { email: string; name?: string } {
  const m = /^\s*(.*?)\s*<([^<>\s]+@[^<>\s]+)>\s*$/.exec(text) ?? /^\s*()(\S+@\S+)\s*$/.exec(text);
  if (!m || /[\s,;:<>"]/.test(m[2]))
    throw new EventDataError(`attendee "${text.slice(0, 80)}" is not an email address or "Name <email>"`);
  const name = m[1].replace(/^"(.*)"$/, '$1').trim();
  return name ? { email: m[2], name } : { email: m[2] };
}

/** The end of an event as RFC 5545 3.6.1 has it when DTEND is absent: DURATION, else one day or no time. */
function endOf(vevent: IcalComponent, start: When, zone: string, vtimezones: IcalComponent[]): When {
  const dtend = propertyOf(vevent, 'DTEND');
  if (dtend) return whenOf(dtend, zone, vtimezones);
  const duration = propertyOf(vevent, 'DURATION')?.value;
  if (start.allDay) {
    const days = duration ? Math.max(1, Math.round(durationMs(duration) / 86_400_000)) : 1;
    return { allDay: true, date: addDays(start.date, days) };
  }
  return { allDay: false, ms: start.ms + (duration ? durationMs(duration) : 0) };
}

export function timedEventOf(vevent: IcalComponent, zone: string, vtimezones: IcalComponent[]): TimedEvent {
  const dtstart = propertyOf(vevent, 'DTSTART');
  if (!dtstart) throw new EventDataError(`event ${textOf(vevent, 'UID') ?? ''} has no DTSTART`);
  const start = whenOf(dtstart, zone, vtimezones);
  const end = endOf(vevent, start, zone, vtimezones);
  const recurrenceId = propertyOf(vevent, 'RECURRENCE-ID');
  const text = (name: string) => textOf(vevent, name) ?? null;
  const event: CalendarEvent = {
    uid: textOf(vevent, 'UID') ?? '',
    summary: text('SUMMARY'),
    start: formatWhen(start, zone),
    end: formatWhen(end, zone),
    all_day: start.allDay,
    location: text('LOCATION'),
    description: text('DESCRIPTION'),
    attendees: propertiesOf(vevent, 'ATTENDEE').map(attendeeOf),
    organizer: propertyOf(vevent, 'ORGANIZER') ? mailto(propertyOf(vevent, 'ORGANIZER')!.value) : null,
    status: text('STATUS')?.toUpperCase() ?? null,
    ...(recurrenceId ? { recurrence_id: formatWhen(whenOf(recurrenceId, zone, vtimezones), zone) } : {}),
    recurring: Boolean(recurrenceId || propertyOf(vevent, 'RRULE')),
  };
  return {
    event,
    startMs: whenMs(start, zone),
    endMs: whenMs(end, zone),
    transparent: textOf(vevent, 'TRANSP')?.toUpperCase() === 'TRANSPARENT',
  };
}

/** The VCALENDAR of a calendar object resource. */
export function calendarOf(ics: string): IcalComponent {
  const calendar = parseIcal(ics).find((c) => c.name === 'VCALENDAR');
  if (!calendar) throw new EventDataError('the calendar object holds no VCALENDAR');
  return calendar;
}

const veventsOf = (calendar: IcalComponent) => calendar.components.filter((c) => c.name === 'VEVENT');
const vtimezonesOf = (calendar: IcalComponent) => calendar.components.filter((c) => c.name === 'VTIMEZONE');

/** Every VEVENT of an object: the occurrences of an expanded answer, or a series and its changed occurrences. */
export const timedEventsOf = (ics: string, zone: string): TimedEvent[] => {
  const calendar = calendarOf(ics);
  return veventsOf(calendar).map((v) => timedEventOf(v, zone, vtimezonesOf(calendar)));
};

/** The event an object is about: its series (the VEVENT without RECURRENCE-ID), else its first occurrence. */
export function mainEventOf(ics: string, zone: string): CalendarEvent | undefined {
  const calendar = calendarOf(ics);
  const vevents = veventsOf(calendar);
  const main = vevents.find((v) => !propertyOf(v, 'RECURRENCE-ID')) ?? vevents[0];
  return main && timedEventOf(main, zone, vtimezonesOf(calendar)).event;
}

export interface EventFields {
  summary?: string;
  start?: When;
  end?: When;
  location?: string;
  description?: string;
  attendees?: { email: string; name?: string }[];
}

function checkSpan(start: When, end: When) {
  if (start.allDay !== end.allDay)
    throw new EventDataError('start and end must both be dates (all day) or both be times');
  const before = start.allDay ? start.date < (end as typeof start).date : start.ms < (end as typeof start).ms;
  if (!before) throw new EventDataError('the end must come after the start');
}

function attendeeProperty(a: { email: string; name?: string }, old?: IcalProperty): Omit<IcalProperty, 'name'> {
  return {
    params: {
      ...(a.name ? { CN: a.name } : old?.params.CN ? { CN: old.params.CN } : {}),
      ROLE: old?.params.ROLE ?? 'REQ-PARTICIPANT',
      PARTSTAT: old?.params.PARTSTAT ?? 'NEEDS-ACTION',
      RSVP: old?.params.RSVP ?? 'TRUE',
    },
    value: `mailto:${a.email}`,
  };
}

const PRODID = '-//Cadre//Calendar connector//EN';

/** A new calendar object with one event. */
export function newEventObject(
  uid: string,
  fields: Required<Pick<EventFields, 'summary' | 'start' | 'end'>> & EventFields,
  now: number,
  organizer?: string,
): string {
  checkSpan(fields.start, fields.end);
  const vevent: IcalComponent = { name: 'VEVENT', properties: [], components: [] };
  const stamp = icalUtc(now);
  setProperty(vevent, 'UID', escapeText(uid));
  setProperty(vevent, 'DTSTAMP', stamp);
  setProperty(vevent, 'CREATED', stamp);
  setProperty(vevent, 'LAST-MODIFIED', stamp);
  setProperty(vevent, 'SEQUENCE', '0');
  setProperties(vevent, 'DTSTART', [icalWhen(fields.start)]);
  setProperties(vevent, 'DTEND', [icalWhen(fields.end)]);
  setText(vevent, 'SUMMARY', fields.summary);
  setText(vevent, 'LOCATION', fields.location);
  setText(vevent, 'DESCRIPTION', fields.description);
  setProperty(vevent, 'STATUS', 'CONFIRMED');
  if (fields.attendees?.length) {
    // RFC 5546: an event with attendees names its organizer.
    if (organizer) setProperty(vevent, 'ORGANIZER', `mailto:${organizer}`);
    setProperties(
      vevent,
      'ATTENDEE',
      fields.attendees.map((a) => attendeeProperty(a)),
    );
  }
  return serializeIcal({
    name: 'VCALENDAR',
    properties: [
      { name: 'VERSION', params: {}, value: '2.0' },
      { name: 'PRODID', params: {}, value: PRODID },
      { name: 'CALSCALE', params: {}, value: 'GREGORIAN' },
    ],
    components: [vevent],
  });
}

/** Marks a changed event: a new SEQUENCE, LAST-MODIFIED and DTSTAMP. */
function touch(vevent: IcalComponent, now: number) {
  setProperty(vevent, 'SEQUENCE', String((Number(propertyOf(vevent, 'SEQUENCE')?.value) || 0) + 1));
  setProperty(vevent, 'LAST-MODIFIED', icalUtc(now));
  setProperty(vevent, 'DTSTAMP', icalUtc(now));
}

/** The series of an object (its VEVENT without RECURRENCE-ID), the one a change applies to. */
function seriesOf(calendar: IcalComponent): IcalComponent {
  const vevents = veventsOf(calendar);
  const series = vevents.find((v) => !propertyOf(v, 'RECURRENCE-ID')) ?? vevents[0];
  if (!series) throw new EventDataError('the calendar object holds no event');
  return series;
}

/**
 * Applies the fields given to the object's event and answers the changed object and the names of what changed
 * (none when it already is so: a repeated change writes nothing).
 */
export function changeEvent(
  ics: string,
  fields: EventFields,
  zone: string,
  now: number,
): { ics: string; changed: string[] } {
  const calendar = calendarOf(ics);
  const vevent = seriesOf(calendar);
  const vtimezones = vtimezonesOf(calendar);
  const changed: string[] = [];
  for (const name of ['summary', 'location', 'description'] as const) {
    const value = fields[name];
    if (value === undefined) continue;
    const prop = name.toUpperCase();
    if ((textOf(vevent, prop) ?? '') === value) continue;
    setText(vevent, prop, value);
    changed.push(name);
  }
  if (fields.start || fields.end) {
    const dtstart = propertyOf(vevent, 'DTSTART');
    if (!dtstart) throw new EventDataError('the event has no start to change');
    const oldStart = whenOf(dtstart, zone, vtimezones);
    const oldEnd = endOf(vevent, oldStart, zone, vtimezones);
    const start = fields.start ?? oldStart;
    let end = fields.end;
    if (!end) {
      // A start alone moves the event and keeps its length.
      if (start.allDay !== oldStart.allDay)
        throw new EventDataError('give the end too when changing between an all-day event and a timed one');
      end = start.allDay
        ? {
            allDay: true,
            date: addDays(
              start.date,
              Math.round(
                (Date.parse((oldEnd as typeof start).date) - Date.parse((oldStart as typeof start).date)) / 86_400_000,
              ),
            ),
          }
        : { allDay: false, ms: start.ms + ((oldEnd as { ms: number }).ms - (oldStart as { ms: number }).ms) };
    }
    checkSpan(start, end);
    // A time in a named zone stays in that zone, so a recurring series keeps its wall-clock time across DST.
    const keepZone = dtstart.params.TZID ? ianaZoneOf(dtstart.params.TZID) : undefined;
    const same = (a: When, b: When) => (a.allDay ? b.allDay && a.date === b.date : !b.allDay && a.ms === b.ms);
    if (!same(start, oldStart)) changed.push('start');
    if (!same(end, oldEnd)) changed.push('end');
    if (!same(start, oldStart) || !same(end, oldEnd)) {
      setProperties(vevent, 'DTSTART', [icalWhen(start, keepZone)]);
      setProperties(vevent, 'DURATION', []);
      setProperties(vevent, 'DTEND', [icalWhen(end, keepZone)]);
    }
  }
  if (fields.attendees) {
    const old = propertiesOf(vevent, 'ATTENDEE');
    const key = (email: string) => email.toLowerCase();
    const before = old.map((p) => key(mailto(p.value))).sort();
    const after = fields.attendees.map((a) => key(a.email)).sort();
    const namesChange = fields.attendees.some((a) => {
      const was = old.find((p) => key(mailto(p.value)) === key(a.email));
      return a.name !== undefined && was?.params.CN !== a.name;
    });
    if (JSON.stringify(before) !== JSON.stringify(after) || namesChange) {
      // Who stays keeps their answer (PARTSTAT); who is new is asked.
      setProperties(
        vevent,
        'ATTENDEE',
        fields.attendees.map((a) =>
          attendeeProperty(
            a,
            old.find((p) => key(mailto(p.value)) === key(a.email)),
          ),
        ),
      );
      changed.push('attendees');
    }
  }
  if (changed.length === 0) return { ics, changed };
  touch(vevent, now);
  return { ics: serializeIcal(calendar), changed };
}

/**
 * Marks every VEVENT of the object (the series and its changed occurrences) STATUS:CANCELLED; answers undefined when
 * all already are.
 */
export function cancelEvent(ics: string, now: number): string | undefined {
  const calendar = calendarOf(ics);
  const open = veventsOf(calendar).filter(
    (v) => unescapeText(propertyOf(v, 'STATUS')?.value ?? '').toUpperCase() !== 'CANCELLED',
  );
  if (open.length === 0) return undefined;
  for (const vevent of open) {
    setProperty(vevent, 'STATUS', 'CANCELLED');
    touch(vevent, now);
  }
  return serializeIcal(calendar);
}
