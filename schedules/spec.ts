// A schedule trigger in three forms: the cron expression Temporal runs, the sentence a person reads
// ("every weekday at 09:00, Europe/Berlin") and the next fire times. Fire times for calendar schedules come
// from croner in the trigger's time zone (so daylight-saving changes move the UTC time, not the local one).
import { Cron } from 'croner';
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

export class ScheduleError extends Error {}

/** Throws ScheduleError with the parser's reason when a custom cron expression is not valid. */
export function checkSchedule(config: ScheduleConfig): void {
  const cron = cronOf(config.schedule);
  if (!cron) return;
  try {
    new Cron(cron, { timezone: config.timezone, paused: true });
  } catch (err) {
    throw new ScheduleError(`the cron expression "${cron}" is not valid: ${(err as Error).message}`);
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

/**
 * The next `count` fire times after `from`. Intervals count from the Unix epoch, as Temporal's do, so the
 * times shown are the times the schedule fires.
 */
export function nextFireTimes(config: ScheduleConfig, count = 5, from = new Date()): Date[] {
  const s = config.schedule;
  if (s.type === 'interval') {
    const step = intervalSeconds(s) * 1_000;
    const first = Math.floor(from.getTime() / step) * step + step;
    return Array.from({ length: count }, (_, i) => new Date(first + i * step));
  }
  return new Cron(cronOf(s)!, { timezone: config.timezone, paused: true }).nextRuns(count, from);
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
      const text = cronstrue.toString(cronOf(s)!, { use24HourTimeFormat: true, verbose: false });
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
