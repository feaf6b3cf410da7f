// The calendar connector over CalDAV (model/connectors/caldav.ts) with tsdav: the check signs in, finds the
// calendar the settings name and reads it as a run would; tools in tools.ts, event pollers in poller.ts.
import { caldavConnector } from '../../../model/connectors/caldav';
import { implement } from '../implementation';
import { calendarName, checkSession } from './client';
import { pollEvents } from './poller';
import { calendarHandlers, eventsBetween } from './tools';

export const caldavImplementation = implement(caldavConnector, {
  async check(c) {
    const s = await checkSession(c);
    // A read as a run makes it: the next day's events.
    const now = Date.now();
    await eventsBetween(c, s, now, now + 86_400_000);
    return {
      server_version: s.server ? `CalDAV (${s.server})` : 'CalDAV',
      found: s.calendars.map((cal) => (cal === s.calendar ? `${calendarName(cal)} (used)` : calendarName(cal))),
    };
  },
  handlers: {
    'calendar.list_events': (input, c) => calendarHandlers.listEvents(input, c),
    'calendar.create_event': (input, c, ctx) => calendarHandlers.createEvent(input, c, ctx),
    'calendar.update_event': (input, c) => calendarHandlers.updateEvent(input, c),
    'calendar.cancel_event': (input, c) => calendarHandlers.cancelEvent(input, c),
    'calendar.free_busy': (input, c) => calendarHandlers.freeBusy(input, c),
  },
  pollers: {
    'event.created': (c, cursor) => pollEvents(c, cursor, 'created'),
    'event.updated': (c, cursor) => pollEvents(c, cursor, 'updated'),
  },
});
