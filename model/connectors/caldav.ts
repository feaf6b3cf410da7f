// A calendar over CalDAV (RFC 4791): Nextcloud, iCloud, Fastmail, Radicale, Baïkal, ... Agents list events, create,
// change and cancel them (each write waits for a reviewer until the agent's editor says otherwise), and ask when
// the calendar is busy; event triggers can start runs when an event is created or changed.
import { z } from 'zod';
import { connectionArg, defineConnector } from './definition';

const connection = connectionArg('a calendar (CalDAV)');

const isTimeZone = (zone: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

export const caldavConfigSchema = z.object({
  server_url: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .refine(
      (url) => !/^[a-z]+:\/\/[^/]*@/i.test(url),
      'give the user name and password in their own fields, not in the address',
    )
    .describe(
      'the address of the CalDAV server, or of your account or a calendar on it ' +
        '(for example https://cloud.example.com/remote.php/dav or https://dav.example.com/)',
    ),
  username: z.string().min(1).max(200).describe('the user name you sign in to the calendar server with'),
  calendar: z
    .string()
    .min(1)
    .max(2000)
    .optional()
    .describe("which calendar to use, by its name or its address; the account's first calendar when left empty"),
  timezone: z
    .string()
    .max(100)
    .refine(isTimeZone, 'not a time zone: give an IANA name such as Europe/Berlin or America/New_York')
    .default('UTC')
    .describe(
      'the time zone (IANA name such as Europe/Berlin) for times given without an offset and for the times answered',
    ),
});
export type CaldavConfig = z.infer<typeof caldavConfigSchema>;

const when = (what: string) =>
  z
    .string()
    .min(10)
    .max(40)
    .describe(
      `${what}: a date YYYY-MM-DD for an all-day event, or a time YYYY-MM-DDTHH:MM (with Z or an offset such as ` +
        "+01:00, otherwise in the connection's time zone)",
    );

const attendees = z
  .array(z.string().min(3).max(320))
  .max(100)
  .describe('people invited, as email addresses or "Name <email>"');

const eventFields = {
  summary: z.string().min(1).max(1000).describe('the title'),
  location: z.string().max(1000).describe('where it takes place'),
  description: z.string().max(20_000).describe('notes'),
};

export const caldavConnector = defineConnector({
  kind: 'caldav',
  label: 'Calendar (CalDAV)',
  category: 'calendar',
  description:
    'Events of a CalDAV calendar (Nextcloud, iCloud, Fastmail, Radicale, ...): list, create, change, cancel.',
  config: caldavConfigSchema,
  credentials: z.object({
    password: z.string().min(1).max(1000).describe('the password, or an app password where the server asks for one'),
  }),
  tools: {
    'calendar.list_events': {
      name: 'calendar.list_events',
      description:
        'List the events of the calendar that overlap a period, each occurrence of a recurring event on its own, ' +
        'with uid, summary, start, end, location, description, attendees and status; cancelled events only when asked.',
      input: z.object({
        connection,
        from: when('the start of the period'),
        to: when('the end of the period (exclusive)'),
        include_cancelled: z.boolean().default(false).describe('also list cancelled events'),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'calendar.create_event': {
      name: 'calendar.create_event',
      description:
        'Create an event in the calendar and answer its uid. With attendees, servers that schedule send them ' +
        'invitations. For an all-day event give dates; its end is the day after the last day.',
      input: z.object({
        connection,
        summary: eventFields.summary,
        start: when('when it starts'),
        end: when('when it ends (for an all-day event, the day after the last day)'),
        location: eventFields.location.optional(),
        description: eventFields.description.optional(),
        attendees: attendees.optional(),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'calendar.update_event': {
      name: 'calendar.update_event',
      description:
        'Change an event by its uid: only the fields given change (a recurring event changes as a whole series); ' +
        'giving start alone keeps its length. Fails, rather than overwrites, if it changed meanwhile and cannot be re-read.',
      input: z.object({
        connection,
        uid: z.string().min(1).max(500).describe('the uid of the event, as list_events or create_event answered it'),
        summary: eventFields.summary.optional(),
        start: when('the new start').optional(),
        end: when('the new end').optional(),
        location: eventFields.location.optional().describe('the new place; an empty text removes it'),
        description: eventFields.description.optional().describe('the new notes; an empty text removes them'),
        attendees: attendees.optional().describe('the new list of people invited; replaces the old list'),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'calendar.cancel_event': {
      name: 'calendar.cancel_event',
      description:
        'Cancel an event by its uid: it stays in the calendar marked cancelled (attendees and calendar apps see the ' +
        'cancellation, free/busy no longer counts it); cancelling it again changes nothing.',
      input: z.object({
        connection,
        uid: z.string().min(1).max(500).describe('the uid of the event'),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'calendar.free_busy': {
      name: 'calendar.free_busy',
      description:
        'When the calendar is busy in a period: the busy intervals, merged and in order (cancelled and ' +
        'transparent events do not count).',
      input: z.object({
        connection,
        from: when('the start of the period'),
        to: when('the end of the period (exclusive)'),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
  },
  events: {
    'event.created': { description: 'An event was added to the calendar (by anyone, in any app).' },
    'event.updated': { description: 'An event of the calendar was changed or cancelled.' },
  },
  where: (config) => {
    let host = config.server_url;
    try {
      host = new URL(config.server_url).host;
    } catch {
      // shown as given
    }
    return `${config.username}@${host}`;
  },
});
