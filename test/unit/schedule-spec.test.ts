import assert from 'node:assert/strict';
import { cronOf, describeSchedule, nextFireTimes, temporalSpec } from '../../schedules/spec';
import { scheduleConfigSchema, type ScheduleConfig } from '../../model/trigger';

const config = (input: unknown): ScheduleConfig => scheduleConfigSchema.parse(input);
const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

describe('schedule spec', () => {
  it('keeps the local time across the spring daylight-saving change (Europe/Berlin, 28 March 2027)', () => {
    const daily = config({ schedule: { type: 'daily', at: '09:00' }, timezone: 'Europe/Berlin' });
    assert.deepEqual(iso(nextFireTimes(daily, 4, new Date('2027-03-26T12:00:00Z'))), [
      '2027-03-27T08:00:00.000Z', // CET, UTC+1
      '2027-03-28T07:00:00.000Z', // CEST, UTC+2, from that Sunday on
      '2027-03-29T07:00:00.000Z',
      '2027-03-30T07:00:00.000Z',
    ]);
  });

  it('keeps the local time across the autumn change with a cron expression (America/New_York, 7 November 2027)', () => {
    const weekdays = config({
      schedule: { type: 'cron', expression: '30 8 * * 1-5' },
      timezone: 'America/New_York',
    });
    assert.deepEqual(iso(nextFireTimes(weekdays, 3, new Date('2027-11-04T00:00:00Z'))), [
      '2027-11-04T12:30:00.000Z', // Thursday, EDT (UTC-4)
      '2027-11-05T12:30:00.000Z', // Friday
      '2027-11-08T13:30:00.000Z', // Monday, EST (UTC-5)
    ]);
  });

  it('skips a month without the chosen day', () => {
    const monthly = config({ schedule: { type: 'monthly', day: 31, at: '18:00' }, timezone: 'UTC' });
    assert.deepEqual(iso(nextFireTimes(monthly, 2, new Date('2027-01-31T20:00:00Z'))), [
      '2027-03-31T18:00:00.000Z',
      '2027-05-31T18:00:00.000Z',
    ]);
    assert.match(describeSchedule(monthly), /monthly on the 31st at 18:00, UTC \(months without a 31st are skipped\)/);
  });

  it('counts intervals from the epoch, as Temporal does', () => {
    const every15 = config({ schedule: { type: 'interval', every: 15, unit: 'minutes' } });
    assert.deepEqual(iso(nextFireTimes(every15, 2, new Date('2027-01-01T10:07:00Z'))), [
      '2027-01-01T10:15:00.000Z',
      '2027-01-01T10:30:00.000Z',
    ]);
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
