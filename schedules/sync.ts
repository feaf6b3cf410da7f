// Keeps Temporal Schedules equal to the schedule and event triggers in the database: one schedule per trigger with a
// stable id (an event trigger's fires its poller, workflows/event-poll.ts), paused exactly while its agent is not
// Live; an email.received trigger also has its mailbox watch (IMAP IDLE) exactly while Live. The database is the
// source of truth; reconcile() at start repairs any drift (a schedule deleted by hand, a crash between the database
// write and Temporal).
// Outside api/ because the API (triggers, lifecycle) and the activities (account erasure) both manage schedules.
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  WorkflowNotFoundError,
  type Client,
  type ScheduleOptions,
} from '@temporalio/client';
import type { Knex } from 'knex';
import type { AgentState } from '../db/agents';
import { listScheduleTriggers, type TriggerRow } from '../db/triggers';
import type { TemporalConfig } from '../temporal.config';
import { eventConfigSchema, scheduleConfigSchema } from '../model/trigger';
import type { scheduledRun } from '../workflows/scheduled-run';
import type { eventPoll } from '../workflows/event-poll';
import type { mailboxWatch } from '../workflows/mailbox-watch';
import { temporalSpec } from './spec';
import { isLeftoverPreview } from './fire-times';

export const scheduleIdOf = (t: Pick<TriggerRow, 'agent_id' | 'id'>) => `agent-${t.agent_id}-trigger-${t.id}`;
const scheduleIdPattern = /^agent-[0-9a-f-]{36}-trigger-[0-9a-f-]{36}$/;

export interface ScheduleSyncDeps {
  temporal: Client;
  temporalConfig: TemporalConfig;
}

const pauseNote = (state: AgentState) => `agent is ${state}: scheduled runs start only while it is live`;

/** The triggers a Temporal Schedule drives: schedules, and the pollers of event triggers. */
export const isScheduled = (t: Pick<TriggerRow, 'kind'>) => t.kind === 'schedule' || t.kind === 'event';

export const eventPollWorkflowId = (triggerId: string) => `event-poll-${triggerId}`;

/** An event trigger's poller: every poll interval, one poll at a time (a poll still going skips the next fire). */
function pollerOptions(deps: ScheduleSyncDeps, trigger: TriggerRow, agentState: AgentState) {
  const config = eventConfigSchema.parse(trigger.config);
  const paused = agentState !== 'live';
  return {
    spec: { intervals: [{ every: `${config.poll_interval_seconds}s` }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: 'eventPoll',
      workflowId: eventPollWorkflowId(trigger.id),
      taskQueue: deps.temporalConfig.taskQueue,
      args: [{ triggerId: trigger.id }] as Parameters<typeof eventPoll>,
    },
    policies: { overlap: 'SKIP' as const, catchupWindow: '10s', pauseOnFailure: false },
    state: { paused, note: paused ? pauseNote(agentState) : 'agent is live' },
  } satisfies Omit<ScheduleOptions, 'scheduleId'>;
}

function scheduleOptions(deps: ScheduleSyncDeps, trigger: TriggerRow, agentState: AgentState) {
  if (trigger.kind === 'event') return pollerOptions(deps, trigger, agentState);
  const config = scheduleConfigSchema.parse(trigger.config);
  const paused = agentState !== 'live';
  return {
    spec: temporalSpec(config),
    action: {
      type: 'startWorkflow' as const,
      workflowType: 'scheduledRun',
      // Temporal appends the fire time to this id, so every fire is its own workflow.
      workflowId: `scheduled-${trigger.id}`,
      taskQueue: deps.temporalConfig.taskQueue,
      args: [{ triggerId: trigger.id }] as Parameters<typeof scheduledRun>,
    },
    policies: {
      overlap: config.overlap.toUpperCase() as 'SKIP',
      catchupWindow: `${config.catchup_window_seconds}s`,
      pauseOnFailure: false,
    },
    state: { paused, note: paused ? pauseNote(agentState) : 'agent is live' },
  } satisfies Omit<ScheduleOptions, 'scheduleId'>;
}

export const mailboxWatchWorkflowId = (triggerId: string) => `mailbox-watch-${triggerId}`;

/** An email.received trigger also waits on its folder with IMAP IDLE (workflows/mailbox-watch.ts) while Live. */
const watchesMailbox = (t: TriggerRow) =>
  t.kind === 'event' && eventConfigSchema.safeParse(t.config).data?.event === 'email.received';

/** Starts the trigger's mailbox watch afresh (an edited trigger's watch must read its new settings). */
async function startMailboxWatch(deps: ScheduleSyncDeps, trigger: TriggerRow) {
  await deps.temporal.workflow.start<typeof mailboxWatch>('mailboxWatch', {
    workflowId: mailboxWatchWorkflowId(trigger.id),
    taskQueue: deps.temporalConfig.taskQueue,
    args: [{ triggerId: trigger.id }],
    workflowIdConflictPolicy: 'TERMINATE_EXISTING',
  });
}

/** Ends the trigger's mailbox watch, if it has one; terminated rather than cancelled, so a restart cannot race it. */
async function stopMailboxWatch(deps: Pick<ScheduleSyncDeps, 'temporal'>, triggerId: string, reason: string) {
  try {
    await deps.temporal.workflow.getHandle(mailboxWatchWorkflowId(triggerId)).terminate(reason);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}

async function syncMailboxWatch(deps: ScheduleSyncDeps, trigger: TriggerRow, agentState: AgentState) {
  // A trigger edited to wait for another event: its watch sees that when its wait ends, and stops by itself.
  if (!watchesMailbox(trigger)) return;
  if (agentState === 'live') await startMailboxWatch(deps, trigger);
  else await stopMailboxWatch(deps, trigger.id, pauseNote(agentState));
}

/** Creates the trigger's schedule, or brings an existing one in line with the trigger and its agent. */
export async function upsertSchedule(deps: ScheduleSyncDeps, trigger: TriggerRow, agentState: AgentState) {
  const scheduleId = scheduleIdOf(trigger);
  const options = scheduleOptions(deps, trigger, agentState);
  try {
    await deps.temporal.schedule.create({ scheduleId, ...options });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await deps.temporal.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, ...options }));
  }
  if (trigger.kind === 'event') await syncMailboxWatch(deps, trigger, agentState);
}

/** Deletes the trigger's schedule, and its mailbox watch if it has one. */
export async function deleteSchedule(
  deps: Pick<ScheduleSyncDeps, 'temporal'>,
  trigger: Pick<TriggerRow, 'agent_id' | 'id' | 'kind'>,
) {
  try {
    await deps.temporal.schedule.getHandle(scheduleIdOf(trigger)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  if (trigger.kind === 'event') await stopMailboxWatch(deps, trigger.id, 'the trigger was removed');
}

/** Pauses (agent paused) or unpauses (agent live again) every schedule of the agent. */
export async function setSchedulesPaused(
  deps: ScheduleSyncDeps,
  triggers: TriggerRow[],
  agentState: AgentState,
): Promise<void> {
  await Promise.all(
    triggers.filter(isScheduled).map(async (t) => {
      const handle = deps.temporal.schedule.getHandle(scheduleIdOf(t));
      try {
        if (agentState === 'live') await handle.unpause('agent is live');
        else await handle.pause(pauseNote(agentState));
      } catch (err) {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
        return upsertSchedule(deps, t, agentState); // missing: recreate it in the right state
      }
      if (t.kind === 'event') await syncMailboxWatch(deps, t, agentState);
    }),
  );
}

/**
 * Makes Temporal's schedules match the database; returns what it had to change. Also deletes the throwaway schedules
 * of fire-time previews that a crash left behind (schedules/fire-times.ts).
 */
export async function reconcileSchedules(
  deps: ScheduleSyncDeps & { knex: Knex },
): Promise<{ synced: number; removed: string[] }> {
  const triggers = await listScheduleTriggers(deps.knex);
  const wanted = new Set(triggers.map(scheduleIdOf));
  const removed: string[] = [];
  for await (const summary of deps.temporal.schedule.list()) {
    const stray = scheduleIdPattern.test(summary.scheduleId) && !wanted.has(summary.scheduleId);
    if (stray || isLeftoverPreview(summary.scheduleId)) {
      await deps.temporal.schedule
        .getHandle(summary.scheduleId)
        .delete()
        .catch((err) => {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
        });
      removed.push(summary.scheduleId);
    }
  }
  for (const t of triggers) await upsertSchedule(deps, t, t.agent_state);
  return { synced: triggers.length, removed };
}
