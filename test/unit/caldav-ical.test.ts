// The calendar connector's own iCalendar reading and writing (activities/connectors/caldav/): escaping, folding and
// parameter quoting survive a round trip, times come out right in named zones, zones only a VTIMEZONE defines and
// across DST changes, and changes to an event touch only what they change.
import assert from 'node:assert/strict';
import {
  escapeText,
  parseIcal,
  propertyOf,
  serializeIcal,
  textOf,
  unescapeText,
} from '../../activities/connectors/caldav/ical';
import { formatInZone, parseWhen, whenOf, durationMs } from '../../activities/connectors/caldav/times';
import {
  cancelEvent,
  changeEvent,
  mainEventOf,
  newEventObject,
  parseAttendee,
  timedEventsOf,
} from '../../activities/connectors/caldav/events';
import { mergeIntervals } from '../../activities/connectors/caldav/tools';

const wrap = (...lines: string[]) => ['BEGIN:VCALENDAR', 'VERSION:2.0', ...lines, 'END:VCALENDAR', ''].join('\r\n');
const prop = (line: string) => parseIcal(wrap(line))[0].properties[1];

describe('calendar connector: iCalendar', () => {
  it('escapes text so that ; , \\ and newlines come back as written', () => {
    const text = 'Budget; Q3, final\\draft\nRoom 2';
    assert.equal(escapeText(text), 'Budget\\; Q3\\, final\\\\draft\\nRoom 2');
    assert.equal(unescapeText(escapeText(text)), text);
  });

  it('folds long lines at 75 octets without splitting a character, and unfolds them', () => {
    const summary = 'Überraschungsfeier für Jürgen — 🎉 '.repeat(8);
    const ics = newEventObject(
      'u1',
      {
        summary,
        start: { allDay: false, ms: Date.UTC(2026, 11, 1, 9) },
        end: { allDay: false, ms: Date.UTC(2026, 11, 1, 10) },
      },
      Date.UTC(2026, 10, 1),
    );
    for (const line of ics.split('\r\n')) assert.ok(Buffer.byteLength(line) <= 75, line);
    assert.ok(!ics.includes('\uFFFD'));
    assert.equal(mainEventOf(ics, 'UTC')?.summary, summary);
  });

  it('quotes and encodes parameter values (RFC 6868) and reads quoted ones holding : ; ,', () => {
    const ics = newEventObject(
      'u2',
      {
        summary: 'x',
        start: { allDay: true, date: '2026-12-01' },
        end: { allDay: true, date: '2026-12-02' },
        attendees: [parseAttendee('Lee, Ann "the boss" <ann@example.com>')],
      },
      0,
      'me@example.com',
    );
    const event = mainEventOf(ics, 'UTC')!;
    assert.deepEqual(event.attendees, [
      { email: 'ann@example.com', name: 'Lee, Ann "the boss"', status: 'NEEDS-ACTION' },
    ]);
    assert.equal(event.organizer, 'me@example.com');
    const p = prop('ATTENDEE;CN="Doe: John; Jr.";PARTSTAT=ACCEPTED:mailto:john@example.com');
    assert.deepEqual(p.params, { CN: 'Doe: John; Jr.', PARTSTAT: 'ACCEPTED' });
    assert.equal(p.value, 'mailto:john@example.com');
    const encoded = serializeIcal({
      name: 'X',
      properties: [{ name: 'A', params: { CN: 'say "hi"' }, value: 'v' }],
      components: [],
    });
    assert.match(encoded, /A;CN=say \^'hi\^':v/);
    assert.equal(parseIcal(encoded)[0].properties[0].params.CN, 'say "hi"');
  });

  it('reads attendees as email or "Name <email>", and refuses anything else', () => {
    assert.deepEqual(parseAttendee('bob@example.com'), { email: 'bob@example.com' });
    assert.deepEqual(parseAttendee('Ann Lee <ann@example.com>'), { email: 'ann@example.com', name: 'Ann Lee' });
    assert.throws(() => parseAttendee('Ann Lee'), /not an email address or "Name <email>"/);
    assert.throws(() => parseAttendee('a@b.c, d@e.f'), /not an email address/);
  });

  it('refuses malformed objects with a reason', () => {
    assert.throws(
      () => parseIcal('BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VCALENDAR\r\n'),
      /END:VCALENDAR does not close VEVENT/,
    );
    assert.throws(() => parseIcal('BEGIN:VCALENDAR\r\n'), /VCALENDAR is never closed/);
  });
});

describe('calendar connector: times', () => {
  it('reads UTC, IANA zones, prefixed zones, floating times and dates', () => {
    const at = (line: string, zone = 'UTC') => {
      const w = whenOf(prop(line), zone);
      return w.allDay ? w.date : new Date(w.ms).toISOString();
    };
    assert.equal(at('DTSTART:20261201T090000Z'), '2026-12-01T09:00:00.000Z');
    assert.equal(at('DTSTART;TZID=Europe/Berlin:20260701T090000'), '2026-07-01T07:00:00.000Z');
    assert.equal(
      at('DTSTART;TZID=/freeassociation.sourceforge.net/Europe/Berlin:20261201T090000'),
      '2026-12-01T08:00:00.000Z',
    );
    assert.equal(at('DTSTART:20261201T090000', 'America/New_York'), '2026-12-01T14:00:00.000Z');
    assert.equal(at('DTSTART;VALUE=DATE:20261201'), '2026-12-01');
  });

  it('reads a zone only its VTIMEZONE defines, in winter and in summer', () => {
    const ics = wrap(
      'BEGIN:VTIMEZONE',
      'TZID:W. Europe Standard Time',
      'BEGIN:STANDARD',
      'DTSTART:16010101T030000',
      'TZOFFSETFROM:+0200',
      'TZOFFSETTO:+0100',
      'RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10',
      'END:STANDARD',
      'BEGIN:DAYLIGHT',
      'DTSTART:16010101T020000',
      'TZOFFSETFROM:+0100',
      'TZOFFSETTO:+0200',
      'RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3',
      'END:DAYLIGHT',
      'END:VTIMEZONE',
      'BEGIN:VEVENT',
      'UID:w',
      'DTSTART;TZID=W. Europe Standard Time:20260715T100000',
      'DTEND;TZID=W. Europe Standard Time:20261215T100000',
      'END:VEVENT',
    );
    const [e] = timedEventsOf(ics, 'UTC');
    assert.equal(new Date(e.startMs).toISOString(), '2026-07-15T08:00:00.000Z');
    assert.equal(new Date(e.endMs).toISOString(), '2026-12-15T09:00:00.000Z');
  });

  it('takes a tool’s time in the connection’s zone unless it has an offset, also across DST', () => {
    const iso = (text: string, zone = 'Europe/Berlin') => {
      const w = parseWhen('start', text, zone);
      return w.allDay ? w.date : new Date(w.ms).toISOString();
    };
    assert.equal(iso('2026-12-01T10:00'), '2026-12-01T09:00:00.000Z');
    assert.equal(iso('2026-07-01T10:00'), '2026-07-01T08:00:00.000Z');
    assert.equal(iso('2026-03-29T02:30'), '2026-03-29T01:30:00.000Z', 'a time DST skips lands after the gap');
    assert.equal(iso('2026-12-01T10:00:00+05:30'), '2026-12-01T04:30:00.000Z');
    assert.equal(iso('2026-12-01T10:00:00+0530'), '2026-12-01T04:30:00.000Z');
    assert.equal(iso('2026-12-01T10:00Z'), '2026-12-01T10:00:00.000Z');
    assert.equal(iso('2026-12-01'), '2026-12-01');
    assert.throws(() => parseWhen('start', 'tomorrow 10am', 'UTC'), /start "tomorrow 10am" is neither a date/);
    assert.throws(() => parseWhen('start', '2026-13-01', 'UTC'), /neither a date/);
  });

  it('answers times in the connection’s zone with their offset', () => {
    assert.equal(formatInZone(Date.UTC(2026, 11, 1, 9), 'Europe/Berlin'), '2026-12-01T10:00:00+01:00');
    assert.equal(formatInZone(Date.UTC(2026, 6, 1, 9), 'America/New_York'), '2026-07-01T05:00:00-04:00');
    assert.equal(formatInZone(Date.UTC(2026, 6, 1, 9), 'UTC'), '2026-07-01T09:00:00Z');
  });

  it('reads durations', () => {
    assert.equal(durationMs('P1W'), 7 * 86_400_000);
    assert.equal(durationMs('P1DT2H'), 26 * 3_600_000);
    assert.equal(durationMs('-PT15M'), -15 * 60_000);
    assert.throws(() => durationMs('1 hour'), /not an iCalendar duration/);
  });
});

describe('calendar connector: changing events', () => {
  const stored = wrap(
    'PRODID:-//Another App//EN',
    'BEGIN:VEVENT',
    'UID:s1',
    'DTSTAMP:20261101T080000Z',
    'DTSTART;TZID=Europe/Berlin:20261207T090000',
    'DTEND;TZID=Europe/Berlin:20261207T091500',
    'RRULE:FREQ=DAILY;COUNT=5',
    'SUMMARY:Standup',
    'SEQUENCE:3',
    'X-APP-COLOR:teal',
    'END:VEVENT',
    'BEGIN:VEVENT',
    'UID:s1',
    'RECURRENCE-ID;TZID=Europe/Berlin:20261208T090000',
    'DTSTAMP:20261101T080000Z',
    'DTSTART;TZID=Europe/Berlin:20261208T100000',
    'DTEND;TZID=Europe/Berlin:20261208T101500',
    'SUMMARY:Standup (late)',
    'END:VEVENT',
  );

  it('changes the series only where asked, keeps its zone and length, and raises its SEQUENCE', () => {
    const start = parseWhen('start', '2026-12-07T09:30', 'Europe/Berlin');
    const { ics, changed } = changeEvent(stored, { start, summary: 'Standup' }, 'UTC', Date.UTC(2026, 10, 25));
    assert.deepEqual(changed, ['start', 'end']);
    const [series, late] = parseIcal(ics)[0].components;
    assert.equal(propertyOf(series, 'DTSTART')?.value, '20261207T093000', 'in Europe/Berlin, as before');
    assert.equal(propertyOf(series, 'DTSTART')?.params.TZID, 'Europe/Berlin');
    assert.equal(propertyOf(series, 'DTEND')?.value, '20261207T094500');
    assert.equal(propertyOf(series, 'SEQUENCE')?.value, '4');
    assert.equal(propertyOf(series, 'X-APP-COLOR')?.value, 'teal');
    assert.equal(propertyOf(series, 'RRULE')?.value, 'FREQ=DAILY;COUNT=5');
    assert.equal(textOf(late, 'SUMMARY'), 'Standup (late)', 'a changed occurrence stays as it was');
  });

  it('writes nothing when the event already is as asked', () => {
    const { ics, changed } = changeEvent(stored, { summary: 'Standup' }, 'UTC', 0);
    assert.deepEqual(changed, []);
    assert.equal(ics, stored);
  });

  it('moves an all-day event by its dates and refuses mixing dates and times', () => {
    const allDay = wrap(
      'BEGIN:VEVENT',
      'UID:a',
      'DTSTART;VALUE=DATE:20261208',
      'DTEND;VALUE=DATE:20261210',
      'END:VEVENT',
    );
    const { ics } = changeEvent(allDay, { start: { allDay: true, date: '2026-12-20' } }, 'UTC', 0);
    const e = mainEventOf(ics, 'UTC')!;
    assert.deepEqual([e.start, e.end, e.all_day], ['2026-12-20', '2026-12-22', true]);
    assert.throws(
      () => changeEvent(allDay, { start: { allDay: false, ms: 0 } }, 'UTC', 0),
      /give the end too when changing between an all-day event and a timed one/,
    );
    assert.throws(
      () => changeEvent(allDay, { end: { allDay: true, date: '2026-12-01' } }, 'UTC', 0),
      /the end must come after the start/,
    );
  });

  it('cancels the series and its changed occurrences, once', () => {
    const cancelled = cancelEvent(stored, Date.UTC(2026, 10, 25))!;
    const events = timedEventsOf(cancelled, 'UTC').map((e) => e.event.status);
    assert.deepEqual(events, ['CANCELLED', 'CANCELLED']);
    assert.equal(cancelEvent(cancelled, 0), undefined);
  });

  it('merges busy intervals and clips them to the period', () => {
    assert.deepEqual(
      mergeIntervals(
        [
          { start: 50, end: 60 },
          { start: 0, end: 20 },
          { start: 10, end: 30 },
          { start: 30, end: 40 },
          { start: 95, end: 200 },
        ],
        5,
        100,
      ),
      [
        { start: 5, end: 40 },
        { start: 50, end: 60 },
        { start: 95, end: 100 },
      ],
    );
  });
});
