// Times between people, iCalendar and instants: a tool's "2026-12-01T10:00" is a wall-clock time in the connection's
// time zone, iCalendar's DTSTART may be UTC, a wall-clock time in a TZID zone, floating, or a DATE (all day), and
// answers give times in the connection's zone with their offset so they are both exact and readable.
import type { IcalComponent, IcalProperty } from './ical';
import { propertiesOf, propertyOf } from './ical';

/** An all-day date (YYYY-MM-DD) or an instant (ms since the epoch). */
export type When = { allDay: true; date: string } | { allDay: false; ms: number };

const formatters = new Map<string, Intl.DateTimeFormat>();
function offsetFormatter(zone: string) {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    formatters.set(zone, f);
  }
  return f;
}

export function isTimeZone(zone: string): boolean {
  try {
    offsetFormatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** Minutes east of UTC in `zone` at the instant `ms`. */
export function offsetMinutes(zone: string, ms: number): number {
  const name = offsetFormatter(zone)
    .formatToParts(ms)
    .find((p) => p.type === 'timeZoneName')!.value;
  const m = /GMT([+-])(\d\d):(\d\d)/.exec(name);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}

/**
 * The instant a wall-clock time (given as if it were UTC) has in `offsetAt`'s zone. Two passes settle the offset
 * around a change; a time that does not exist (skipped by a DST change) lands after the gap, as calendar apps do.
 */
function wallToInstant(wallMs: number, offsetAt: (ms: number) => number): number {
  const first = wallMs - offsetAt(wallMs) * 60_000;
  return wallMs - offsetAt(first) * 60_000;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** "2026-12-01T11:00:00+01:00": the instant as a wall-clock time in `zone`, with its offset. */
export function formatInZone(ms: number, zone: string): string {
  const offset = offsetMinutes(zone, ms);
  const d = new Date(ms + offset * 60_000);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  const tz = offset === 0 && zone === 'UTC' ? 'Z' : `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}` +
    `T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${tz}`
  );
}

export const formatWhen = (w: When, zone: string) => (w.allDay ? w.date : formatInZone(w.ms, zone));

export function addDays(date: string, days: number): string {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

/** The instant at the start of an all-day date in `zone` (for free/busy and ordering). */
export const startOfDate = (date: string, zone: string) =>
  wallToInstant(Date.parse(`${date}T00:00:00Z`), (ms) => offsetMinutes(zone, ms));

export const whenMs = (w: When, zone: string) => (w.allDay ? startOfDate(w.date, zone) : w.ms);

export class TimeInputError extends Error {}

/**
 * A tool's date or time: YYYY-MM-DD (all day), or YYYY-MM-DDTHH:MM[:SS] with Z or an offset, or without one in
 * `zone`.
 */
export function parseWhen(field: string, text: string, zone: string): When {
  const t = text.trim();
  if (/^\d{4}-\d\d-\d\d$/.test(t) && !Number.isNaN(Date.parse(`${t}T00:00:00Z`))) return { allDay: true, date: t };
  const m = /^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d(?:\.\d+)?)?)(Z|[+-]\d\d:?\d\d)?$/i.exec(t);
  const wall = m && Date.parse(`${m[1]}T${m[2]}Z`);
  if (!m || wall === null || Number.isNaN(wall))
    throw new TimeInputError(
      `${field} "${text.slice(0, 60)}" is neither a date (YYYY-MM-DD, all day) nor a time (YYYY-MM-DDTHH:MM, ` +
        `with Z or an offset, or else in the connection's time zone ${zone})`,
    );
  if (!m[3]) return { allDay: false, ms: wallToInstant(wall, (ms) => offsetMinutes(zone, ms)) };
  return {
    allDay: false,
    ms: Date.parse(`${m[1]}T${m[2]}${m[3].length === 5 ? m[3].replace(/(\d\d)$/, ':$1') : m[3]}`),
  };
}

// --- iCalendar values ---

const icalDate = (date: string) => date.replace(/-/g, '');

export const icalUtc = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/\.\d{3}/, '')
    .replace(/[-:]/g, '');

/** The wall-clock time of an instant in `zone`, as iCalendar writes it with TZID (no Z). */
export const icalWall = (ms: number, zone: string) => icalUtc(ms + offsetMinutes(zone, ms) * 60_000).slice(0, -1);

/** A DTSTART/DTEND property value: DATE for all day, else UTC, or a wall-clock time in `keepZone` when given. */
export function icalWhen(w: When, keepZone?: string): Pick<IcalProperty, 'params' | 'value'> {
  if (w.allDay) return { params: { VALUE: 'DATE' }, value: icalDate(w.date) };
  if (keepZone) return { params: { TZID: keepZone }, value: icalWall(w.ms, keepZone) };
  return { params: {}, value: icalUtc(w.ms) };
}

/** The IANA zone a TZID names, also when a client prefixes it (Evolution's "/freeassociation.sourceforge.net/..."). */
export function ianaZoneOf(tzid: string): string | undefined {
  const parts = tzid.replace(/^\/+/, '').split('/');
  for (let i = 0; i < parts.length; i++) {
    const candidate = parts.slice(i).join('/');
    if (isTimeZone(candidate)) return candidate;
  }
  return undefined;
}

const parseOffset = (text: string | undefined) => {
  const m = /^([+-])(\d\d)(\d\d)/.exec(text ?? '');
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
};

const wallOf = (value: string) => {
  const m = /^(\d{4})(\d\d)(\d\d)(?:T(\d\d)(\d\d)(\d\d)?)?/.exec(value);
  if (!m) return NaN;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] ?? 0), +(m[5] ?? 0), +(m[6] ?? 0));
};

const weekdays = ['SU', 'MO', 'TU', 'WE', 'TH', 'FR', 'SA'];

/** The wall-clock onset in `year` of an observance with a yearly BYMONTH/BYDAY rule (-1SU, 2SU, ...). */
function yearlyOnset(rrule: string, year: number, timeOfDay: number): number | undefined {
  const rule = Object.fromEntries(rrule.split(';').map((kv) => kv.split('=') as [string, string]));
  const day = /^([+-]?\d)?(SU|MO|TU|WE|TH|FR|SA)$/.exec(rule.BYDAY ?? '');
  if (rule.FREQ !== 'YEARLY' || !rule.BYMONTH || !day) return undefined;
  if (rule.UNTIL && wallOf(rule.UNTIL) < Date.UTC(year, 0, 1)) return undefined;
  const month = Number(rule.BYMONTH) - 1;
  const nth = Number(day[1] ?? 1);
  const wd = weekdays.indexOf(day[2]);
  const dates: number[] = [];
  for (let d = 1; d <= 31; d++) {
    const date = new Date(Date.UTC(year, month, d));
    if (date.getUTCMonth() !== month) break;
    if (date.getUTCDay() === wd) dates.push(Date.UTC(year, month, d));
  }
  const pick = nth < 0 ? dates[dates.length + nth] : dates[nth - 1];
  return pick === undefined ? undefined : pick + timeOfDay;
}

/**
 * The offset a VTIMEZONE gives a wall-clock time, for TZIDs that are not IANA names: the latest STANDARD or DAYLIGHT
 * onset before it (from DTSTART, RDATE or a yearly BYMONTH/BYDAY rule) decides.
 */
export function vtimezoneOffsetAt(vtimezone: IcalComponent, wall: number): number {
  const year = new Date(wall).getUTCFullYear();
  let best: { onset: number; offset: number } | undefined;
  for (const obs of vtimezone.components) {
    const start = wallOf(propertyOf(obs, 'DTSTART')?.value ?? '');
    if (Number.isNaN(start)) continue;
    const offset = parseOffset(propertyOf(obs, 'TZOFFSETTO')?.value);
    const onsets = [start];
    for (const rdate of propertiesOf(obs, 'RDATE')) onsets.push(...rdate.value.split(',').map(wallOf));
    const rrule = propertyOf(obs, 'RRULE')?.value;
    if (rrule) {
      const timeOfDay =
        start - Date.UTC(new Date(start).getUTCFullYear(), new Date(start).getUTCMonth(), new Date(start).getUTCDate());
      for (const y of [year - 1, year]) {
        const onset = yearlyOnset(rrule, y, timeOfDay);
        if (onset !== undefined && onset >= start) onsets.push(onset);
      }
    }
    for (const onset of onsets) if (onset <= wall && (!best || onset > best.onset)) best = { onset, offset };
  }
  return best?.offset ?? 0;
}

/**
 * A DTSTART/DTEND/RECURRENCE-ID value as a When: DATE is all day; Z is UTC; a TZID is an IANA zone or one the
 * object's VTIMEZONE defines; a floating time is in `zone`.
 */
export function whenOf(prop: IcalProperty, zone: string, vtimezones: IcalComponent[] = []): When {
  const value = prop.value.trim();
  if (prop.params.VALUE === 'DATE' || /^\d{8}$/.test(value))
    return { allDay: true, date: `${value.slice(0, 4)}-${value.slice(4, 6)}-${value.slice(6, 8)}` };
  const wall = wallOf(value);
  if (Number.isNaN(wall)) throw new TimeInputError(`${prop.name} "${value.slice(0, 40)}" is not an iCalendar time`);
  if (value.toUpperCase().endsWith('Z')) return { allDay: false, ms: wall };
  const tzid = prop.params.TZID;
  const iana = tzid ? ianaZoneOf(tzid) : zone;
  if (iana) return { allDay: false, ms: wallToInstant(wall, (ms) => offsetMinutes(iana, ms)) };
  const vtz = vtimezones.find((c) => propertyOf(c, 'TZID')?.value === tzid);
  if (vtz) return { allDay: false, ms: wall - vtimezoneOffsetAt(vtz, wall) * 60_000 };
  return { allDay: false, ms: wallToInstant(wall, (ms) => offsetMinutes(zone, ms)) };
}

/** An RFC 5545 DURATION (P1D, PT1H30M, -P1W) in milliseconds. */
export function durationMs(text: string): number {
  const m = /^([+-])?P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/.exec(text.trim());
  if (!m) throw new TimeInputError(`DURATION "${text.slice(0, 40)}" is not an iCalendar duration`);
  const [, sign, w, d, h, min, s] = m;
  const ms = ((+(w ?? 0) * 7 + +(d ?? 0)) * 86_400 + +(h ?? 0) * 3600 + +(min ?? 0) * 60 + +(s ?? 0)) * 1000;
  return sign === '-' ? -ms : ms;
}
