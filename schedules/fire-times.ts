// When a schedule fires, as Temporal answers it: Temporal decides when a schedule fires, so the times Cadre shows
// are Temporal's own. A saved schedule's come from describing it (`info.nextActionTimes`). A schedule not saved yet
// (the builder's preview, and the check before saving) is evaluated the only way Temporal offers: a paused
// throwaway schedule with the same spec, described and deleted at once. It never fires (paused, and its workflow
// type exists nowhere); reconcileSchedules() deletes any that a crash left behind.
import { randomUUID } from 'node:crypto';
import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { ScheduleConfig } from '../model/trigger';
import { checkSchedule, cronOf, ScheduleError, temporalSpec } from './spec';

const previewScheduleIdPrefix = 'cadre-preview-';

/** A preview's throwaway schedule that outlived its request by minutes: left behind by a crash (its id says when). */
export function isLeftoverPreview(scheduleId: string, now = Date.now()): boolean {
  if (!scheduleId.startsWith(previewScheduleIdPrefix)) return false;
  const madeAt = Number(scheduleId.slice(previewScheduleIdPrefix.length).split('-')[0]);
  return !(madeAt > now - 5 * 60_000);
}

/** How many fire times Cadre shows. */
export const fireTimesShown = 5;

/**
 * The next fire times of a schedule before it is saved, from Temporal. Throws ScheduleError (a 422) when Temporal
 * cannot run it as written, or when no time ever matches it (`0 0 30 2 *`): a schedule must fire. Save and preview
 * both call this, so they accept and refuse the same schedules.
 */
export async function evaluateSchedule(
  temporal: Client,
  config: ScheduleConfig,
  count = fireTimesShown,
): Promise<Date[]> {
  checkSchedule(config); // names a token Temporal would refuse or misread, before asking it
  const scheduleId = `${previewScheduleIdPrefix}${Date.now()}-${randomUUID()}`;
  let handle;
  try {
    handle = await temporal.schedule.create({
      scheduleId,
      spec: temporalSpec(config),
      action: {
        type: 'startWorkflow',
        workflowType: 'cadreSchedulePreview',
        workflowId: scheduleId,
        taskQueue: 'cadre-schedule-preview',
        args: [],
      },
      state: { paused: true, note: 'a preview of fire times: never fires, deleted at once' },
    });
  } catch (err) {
    // The client turns the server's INVALID_ARGUMENT into a TypeError carrying the server's reason.
    if (err instanceof TypeError) throw new ScheduleError(`Temporal cannot run this schedule: ${err.message}`);
    throw err;
  }
  try {
    const times = (await handle.describe()).info.nextActionTimes;
    if (times.length === 0) {
      const what = config.schedule.type === 'interval' ? 'this interval' : `"${cronOf(config.schedule)}"`;
      throw new ScheduleError(
        `the schedule never fires: no date up to the year 2100 matches ${what} in ${config.timezone}`,
        'schedule_never_fires',
      );
    }
    return times.slice(0, count);
  } finally {
    await handle.delete().catch(() => undefined);
  }
}

/** The next fire times of a saved schedule, from Temporal; undefined when Temporal has no such schedule. */
export async function scheduledFireTimes(
  temporal: Client,
  scheduleId: string,
  count = fireTimesShown,
): Promise<Date[] | undefined> {
  try {
    return (await temporal.schedule.getHandle(scheduleId).describe()).info.nextActionTimes.slice(0, count);
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return undefined;
    throw err;
  }
}
