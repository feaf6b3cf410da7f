import assert from 'node:assert/strict';
import { checkSchedule, cronOf, describeSchedule, ScheduleError, temporalSpec } from '../../schedules/spec';
import { scheduleConfigSchema, type ScheduleConfig } from '../../model/trigger';

const config = (input: unknown): ScheduleConfig => scheduleConfigSchema.parse(input);
const cron = (expression: string) => config({ schedule: { type: 'cron', expression } });

// Fire times are Temporal's own (schedules/fire-times.ts); test/integration/schedule-fire-times.test.ts compares
// the preview with what Temporal fires, daylight-saving changes included.
describe('schedule spec', () => {
  it('refuses, naming the token, what Temporal would refuse or misread (Quartz L, W, ?, #, out of range)', () => {
    const refused: [string, RegExp][] = [
      ['0 9 L * *', /"L" in the day-of-month field: "L" \(the last day of the month\) is not supported/],
      ['0 9 ? * *', /"\?" in the day-of-month field: "\?" \(no specific value\) is not supported/],
      ['0 9 1W * *', /"1W" in the day-of-month field: "W" \(the nearest weekday\) is not supported/],
      ['0 9 * * 5L', /"5L" in the weekday field: "L" \(the last such weekday of a month\) is not supported/],
      ['0 9 * * 5#3', /"5#3" in the weekday field: "#" \(the nth weekday of a month\) is not supported/],
      ['61 * * * *', /"61" in the minute field is out of range: 0-59/],
      ['0 24 * * *', /"24" in the hour field is out of range: 0-23/],
      ['0 9 0 * *', /"0" in the day-of-month field is out of range: 1-31/],
      ['0 9 * 13 *', /"13" in the month field is out of range: 1-12/],
      ['0 9 * * 8', /"8" in the weekday field is out of range: 0-7/],
      ['0 9 * * 5-1', /"5-1" in the weekday field: a range must not end before it starts/],
      ['*/0 * * * *', /"\*\/0" in the minute field: a step must be at least 1/],
      ['0 9 * * FRIDAY', /"FRIDAY" in the weekday field is not valid/],
      ['0 9 * * 1&2', /"1&2" in the weekday field is not valid/],
    ];
    for (const [expression, reason] of refused) {
      assert.throws(
        () => checkSchedule(cron(expression)),
        (err: unknown) =>
          err instanceof ScheduleError &&
          err.code === 'invalid_schedule' &&
          err.message.startsWith(`the cron expression "${expression}" cannot be used: `) &&
          reason.test(err.message),
        expression,
      );
    }
  });

  it('accepts what Temporal reads as cron does: lists, ranges, steps, names, 7 for Sunday', () => {
    for (const expression of [
      '*/15 * * * *',
      '5/15 8-18 * * 1-5',
      '0 9 1,15 * *',
      '30 2 26-30 3 *',
      '0 9 * JAN-MAR mon-fri',
      '0 9 * * 7',
      '0 9 13 * 5',
      '0 0 30 2 *', // valid as written; it never fires, which only Temporal's evaluation can tell (a 422 too)
    ])
      assert.doesNotThrow(() => checkSchedule(cron(expression)), expression);
  });

  it('says that a day of the month and a weekday together mean both, as Temporal fires them', () => {
    assert.equal(
      describeSchedule(cron('0 9 13 * 5')),
      'at 09:00, on day 13 of the month, if that day falls on Friday, UTC',
    );
    assert.equal(
      describeSchedule(cron('0 9 1,15 * 0,6')),
      'at 09:00, on day 1 and 15 of the month, if that day falls on Sunday or Saturday, UTC',
    );
    assert.doesNotMatch(describeSchedule(cron('0 9 13 * *')), /falls on/);
    assert.doesNotMatch(describeSchedule(cron('0 9 * * 5')), /falls on/);
  });

  it('describes a monthly schedule on a day some months lack', () => {
    const monthly = config({ schedule: { type: 'monthly', day: 31, at: '18:00' }, timezone: 'UTC' });
    assert.match(describeSchedule(monthly), /monthly on the 31st at 18:00, UTC \(months without a 31st are skipped\)/);
  });

  it('hands Temporal an interval in seconds (Temporal counts intervals from the epoch)', () => {
    const every15 = config({ schedule: { type: 'interval', every: 15, unit: 'minutes' } });
    assert.deepEqual(temporalSpec(every15), { intervals: [{ every: '900s' }] });
  });

  it('describes schedules in plain language', () => {
    const say = (schedule: unknown, timezone = 'Europe/Berlin') => describeSchedule(config({ schedule, timezone }));
    assert.equal(
      say({ type: 'weekly', days: ['mon', 'tue', 'wed', 'thu', 'fri'], at: '09:00' }),
      'every weekday at 09:00, Europe/Berlin',
    );
    assert.equal(
      say({ type: 'weekly', days: ['fri', 'mon'], at: '17:30' }),
      'every Monday and Friday at 17:30, Europe/Berlin',
    );
    assert.equal(say({ type: 'daily', at: '06:00' }, 'UTC'), 'every day at 06:00, UTC');
    assert.equal(say({ type: 'interval', every: 2, unit: 'hours' }), 'every 2 hours');
    assert.match(say({ type: 'cron', expression: '0 */2 * * *' }), /^on the hour, every 2 hours, Europe\/Berlin$/);
  });

  it('turns calendar schedules into cron with the time zone for Temporal', () => {
    const weekly = config({ schedule: { type: 'weekly', days: ['sun', 'wed'], at: '07:05' }, timezone: 'Asia/Tokyo' });
    assert.equal(cronOf(weekly.schedule), '5 7 * * 0,3');
    assert.deepEqual(temporalSpec(weekly), { cronExpressions: ['5 7 * * 0,3'], timezone: 'Asia/Tokyo' });
  });

  it('refuses unknown time zones and malformed times', () => {
    assert.equal(scheduleConfigSchema.safeParse({ schedule: { type: 'daily', at: '9am' } }).success, false);
    assert.equal(
      scheduleConfigSchema.safeParse({ schedule: { type: 'daily', at: '09:00' }, timezone: 'Europe/Atlantis' }).success,
      false,
    );
    assert.equal(scheduleConfigSchema.safeParse({ schedule: { type: 'cron', expression: '* * *' } }).success, false);
  });
});
