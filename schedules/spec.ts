// A schedule trigger in three forms: the cron expression Temporal runs, the sentence a person reads
// ("every weekday at 09:00, Europe/Berlin") and, asked of Temporal itself, the next fire times (schedules/fire-times.ts).
// Cadre computes no fire time of its own: a second calendar engine would disagree with Temporal's on exactly the
// cases people get wrong (day of month and weekday together, daylight-saving gaps and repeats).
// A custom cron expression is checked here token by token against what Temporal's cron reads the way cron is
// commonly read; the rest of cron dialects (Quartz's L, W, ?, #) is refused by name rather than misread.
import cronstrue from 'cronstrue';
import type { ScheduleSpec } from '@temporalio/client';
import type { Schedule, ScheduleConfig, Weekday } from '../model/trigger';

const cronDay: Record<Weekday, number> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 };
const dayName: Record<Weekday, string> = {
  mon: 'Monday',
  tue: 'Tuesday',
  wed: 'Wednesday',
  thu: 'Thursday',
  fri: 'Friday',
  sat: 'Saturday',
  sun: 'Sunday',
};
const unitSeconds = { seconds: 1, minutes: 60, hours: 3_600 } as const;

/** The five-field cron expression of a calendar schedule; undefined for an interval. */
export function cronOf(schedule: Schedule): string | undefined {
  if (schedule.type === 'interval') return undefined;
  if (schedule.type === 'cron') return schedule.expression.trim().split(/\s+/).join(' ');
  const [hour, minute] = schedule.at.split(':').map(Number);
  switch (schedule.type) {
    case 'daily':
      return `${minute} ${hour} * * *`;
    case 'weekly':
      return `${minute} ${hour} * * ${[...new Set(schedule.days.map((d) => cronDay[d]))].sort().join(',')}`;
    case 'monthly':
      return `${minute} ${hour} ${schedule.day} * *`;
  }
}

export class ScheduleError extends Error {
  constructor(
    message: string,
    /** `invalid_schedule`: Temporal cannot run it as written; `schedule_never_fires`: no time ever matches. */
    readonly code: 'invalid_schedule' | 'schedule_never_fires' = 'invalid_schedule',
  ) {
    super(message);
  }
}

interface CronField {
  name: string;
  min: number;
  max: number;
  /** Names Temporal reads the same way (three-letter month or weekday names), by value. */
  names?: string[];
}

const cronFields: CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['', 'jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  },
  // 0 and 7 are both Sunday, in Temporal as in cron.
  { name: 'weekday', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

/** Why a token other cron dialects know cannot be used: Temporal would refuse it, or (`#`) silently misread it. */
function dialectToken(field: CronField, token: string): string | undefined {
  if (token.includes('#'))
    return `"#" (the nth weekday of a month) is not supported: Temporal reads what follows "#" as a comment, so "${token}" would fire on every such weekday`;
  if (token === '?') return `"?" (no specific value) is not supported: use "*"`;
  if (field.name === 'weekday' && /^\d*L$/i.test(token))
    return `"L" (the last such weekday of a month) is not supported`;
  if (field.name === 'day-of-month' && /^L(-\d+)?$/i.test(token))
    return `"L" (the last day of the month) is not supported`;
  if (/W$/i.test(token) && field.name === 'day-of-month') return `"W" (the nearest weekday) is not supported`;
  return undefined;
}

function fieldValue(field: CronField, text: string, token: string): number {
  const named = field.names?.indexOf(text.toLowerCase()) ?? -1;
  const value = named >= 0 ? named : /^\d+$/.test(text) ? Number(text) : NaN;
  if (Number.isNaN(value))
    throw new ScheduleError(
      `"${token}" in the ${field.name} field is not valid: use numbers, ranges (1-5), lists (1,15), steps (*/15)${field.names ? ' or three-letter names' : ''}`,
    );
  if (value < field.min || value > field.max)
    throw new ScheduleError(`"${token}" in the ${field.name} field is out of range: ${field.min}-${field.max}`);
  return value;
}

/** Throws ScheduleError naming the token when a five-field cron expression is not one Temporal runs as cron does. */
export function checkCron(expression: string): void {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5)
    throw new ScheduleError(
      `the cron expression "${expression}" has ${parts.length} fields; it needs five: minute hour day month weekday`,
    );
  parts.forEach((part, i) => {
    const field = cronFields[i];
    for (const token of part.split(',')) {
      const refused = dialectToken(field, token);
      if (refused) throw new ScheduleError(`"${token}" in the ${field.name} field: ${refused}`);
      const match = /^(\*|[0-9A-Za-z]+(?:-[0-9A-Za-z]+)?)(?:\/(\d+))?$/.exec(token);
      if (!match)
        throw new ScheduleError(
          `"${token}" in the ${field.name} field is not valid: use numbers, ranges (1-5), lists (1,15) or steps (*/15)`,
        );
      const [, range, step] = match;
      if (step !== undefined && Number(step) < 1)
        throw new ScheduleError(`"${token}" in the ${field.name} field: a step must be at least 1`);
      if (range === '*') continue;
      const [from, to] = range.split('-');
      const start = fieldValue(field, from, token);
      if (to !== undefined && fieldValue(field, to, token) < start)
        throw new ScheduleError(`"${token}" in the ${field.name} field: a range must not end before it starts`);
    }
  });
}

/** Throws ScheduleError naming what is wrong when a custom cron expression is not one Temporal runs as written. */
export function checkSchedule(config: ScheduleConfig): void {
  if (config.schedule.type !== 'cron') return;
  const cron = cronOf(config.schedule)!;
  try {
    checkCron(cron);
  } catch (err) {
    if (err instanceof ScheduleError)
      throw new ScheduleError(`the cron expression "${cron}" cannot be used: ${err.message}`, err.code);
    throw err;
  }
}

export function intervalSeconds(schedule: Extract<Schedule, { type: 'interval' }>): number {
  return schedule.every * unitSeconds[schedule.unit];
}

/** The spec handed to Temporal's `client.schedule.create`. */
export function temporalSpec(config: ScheduleConfig): ScheduleSpec {
  const s = config.schedule;
  if (s.type === 'interval') return { intervals: [{ every: `${intervalSeconds(s)}s` }] };
  return { cronExpressions: [cronOf(s)!], timezone: config.timezone };
}

const plural = (n: number, unit: string) => (n === 1 ? unit : `${n} ${unit}s`);

function listOf(words: string[]): string {
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

/** A sentence for people: "every weekday at 09:00, Europe/Berlin". */
export function describeSchedule(config: ScheduleConfig): string {
  const s = config.schedule;
  const tz = config.timezone;
  switch (s.type) {
    case 'interval':
      return `every ${plural(s.every, s.unit.slice(0, -1))}`;
    case 'daily':
      return `every day at ${s.at}, ${tz}`;
    case 'weekly': {
      const days = new Set(s.days);
      const weekdaysOnly = ['mon', 'tue', 'wed', 'thu', 'fri'] as const;
      if (days.size === 7) return `every day at ${s.at}, ${tz}`;
      if (days.size === 5 && weekdaysOnly.every((d) => days.has(d))) return `every weekday at ${s.at}, ${tz}`;
      if (days.size === 2 && days.has('sat') && days.has('sun')) return `every weekend day at ${s.at}, ${tz}`;
      const ordered = (Object.keys(dayName) as Weekday[]).filter((d) => days.has(d)).map((d) => dayName[d]);
      return `every ${listOf(ordered)} at ${s.at}, ${tz}`;
    }
    case 'monthly': {
      const short = s.day > 28 ? ` (months without a ${ordinal(s.day)} are skipped)` : '';
      return `monthly on the ${ordinal(s.day)} at ${s.at}, ${tz}${short}`;
    }
    case 'cron': {
      const cron = cronOf(s)!;
      const say = (expression: string) => cronstrue.toString(expression, { use24HourTimeFormat: true, verbose: false });
      const [minute, hour, dayOfMonth, month, weekday] = cron.split(' ');
      let text = say(cron);
      if (dayOfMonth !== '*' && weekday !== '*') {
        // Temporal fires only on days that match both (classic cron fires on either): say it that way.
        const days = say(`0 0 * * ${weekday}`)
          .replace(/^At 00:00, (only on )?/, '')
          .replace(/ and (\w+)$/, ' or $1');
        text = `${say(`${minute} ${hour} ${dayOfMonth} ${month} *`)}, if that day falls on ${days}`;
      }
      return `${text.charAt(0).toLowerCase()}${text.slice(1)}, ${tz}`;
    }
  }
}

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

const overlapWords = {
  skip: 'skip the new fire while the previous scheduled run is still going',
  buffer_one: 'start it after the previous run ends (at most one waiting)',
  buffer_all: 'start every fire after the previous run ends, in order',
  cancel_other: 'cancel the previous run and start the new one',
  allow_all: 'start it alongside the previous run',
} as const;

/** The overlap and catch-up policies in words, shown next to the schedule. */
export function describePolicies(config: ScheduleConfig): string {
  const w = config.catchup_window_seconds;
  const window =
    w % 3_600 === 0 ? plural(w / 3_600, 'hour') : w % 60 === 0 ? plural(w / 60, 'minute') : plural(w, 'second');
  return `if a run is still going: ${overlapWords[config.overlap]}; after an outage, fires missed within ${window} still run`;
}
