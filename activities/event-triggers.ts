// An event trigger's poll (workflows/event-poll.ts): reads what happened since the trigger's cursor, opens a run per
// new event (or adds it to the trigger's open batch), then moves the cursor. Each event is acted on once however
// often it is read: the trigger keeps what it did with each event it handled (trigger_events: the run it started,
// or none), its run's idempotency key is the trigger and the event's id alone, and its delivery key in a batch is
// the event's id. So a poll that failed between opening runs and moving the cursor reads the same events again,
// starts the runs its first attempt opened (whatever the rows have become since) and opens nothing twice; and a
// table's late-commit window (activities/connectors/events.ts) reads rows again without acting on them twice.
// The cursor never moves past an event that did not get its run: a poll that finds its agent paused halfway stops
// there, and the rest of its events come after the resume (with `deliver_missed`). A failing poll is told once on
// the agent's timeline, not at every interval.
import type { Knex } from 'knex';
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { DuplicateDelivery } from '../db/deliveries';
import { recordEvent } from '../db/timeline';
import { findTrigger, type TriggerRow } from '../db/triggers';
import { eventConfigSchema, type EventConfig } from '../model/trigger';
import { matches } from '../model/interpreter';
import { markStartPending } from '../db/open-run';
import { pollEvents } from './connectors/events';
import type { EventBatch } from './connectors/connector';
import type { ActivityDeps } from './deps';
import { openTriggeredRun, type OpenedRun } from '../services/triggers/fires';
import { acceptIntoBatch, recordSkipped, refusalOfDelivery } from '../services/triggers/deliveries';
import { refusalToRun } from '../services/runs/start';
import { inSpan } from '../services/telemetry/tracing';
import { runFileId, runFileSaver } from '../db/run-files';
import { keepReceivedMail, keepsMailInInbox, noteRunOfMail } from './inbox-mailbox';
import { deliveries } from '../services/telemetry/metrics';

/** How a run's item names a file that came with its event: the id it is stored under (the same on every retry). */
const describeFile = (key: string, f: { name: string; contentType: string; content: Buffer; part: string }) => ({
  file_id: runFileId(key, f.part),
  name: f.name,
  size: f.content.length,
  content_type: f.contentType,
});

type TriggerEvent = EventBatch['events'][number];

async function loadCursor(knex: Knex, triggerId: string) {
  return knex('trigger_cursors')
    .where({ trigger_id: triggerId })
    .first<{ cursor: string | null; last_error: string | null }>();
}

/**
 * Records the cursor, unless it changed since the poll read it (`from`): the agent was resumed meanwhile and its
 * resume marked where the trigger starts again (schedules/event-marks.ts), which a poll under way must not undo.
 */
async function saveCursor(knex: Knex, triggerId: string, from: string | null, cursor: string) {
  await knex.raw(
    `insert into trigger_cursors (trigger_id, cursor, last_error, polled_at) values (?, ?, null, now())
     on conflict (trigger_id) do update set cursor = excluded.cursor, last_error = null, polled_at = excluded.polled_at
     where trigger_cursors.cursor is not distinct from ?`,
    [triggerId, cursor, from],
  );
}

/** How long the trigger remembers an event it handled: longer than any table's late-commit window (one day). */
const handledForSeconds = 2 * 86_400;

/** The events among `ids` the trigger has handled, each with the run it started (null: it started none). */
async function handledEvents(knex: Knex, triggerId: string, ids: string[]): Promise<Map<string, string | null>> {
  if (ids.length === 0) return new Map();
  const rows: { event_id: string; run_id: string | null }[] = await knex('trigger_events')
    .where({ trigger_id: triggerId })
    .whereRaw('event_id = any(?)', [ids])
    .select('event_id', 'run_id');
  return new Map(rows.map((r) => [r.event_id, r.run_id]));
}

async function markHandled(knex: Knex, triggerId: string, eventId: string, runId: string | null) {
  await knex('trigger_events')
    .insert({ trigger_id: triggerId, event_id: eventId, run_id: runId })
    .onConflict(['trigger_id', 'event_id'])
    .ignore();
}

async function forgetOldEvents(knex: Knex, triggerId: string) {
  await knex('trigger_events')
    .where({ trigger_id: triggerId })
    .where('seen_at', '<', knex.raw(`now() - make_interval(secs => ?)`, [handledForSeconds]))
    .delete();
}

const isLive = async (knex: Knex, trigger: TriggerRow) =>
  (await knex('agents').where({ id: trigger.agent_id }).first('state'))?.state === 'live';

/** A run opened earlier for an event, to start: unless it has ended (or been started and gone on, which is fine). */
async function startableRun(knex: Knex, runId: string): Promise<OpenedRun | undefined> {
  const run = await knex('runs').where({ id: runId }).first('id', 'workspace_id', 'agent_id', 'trigger', 'status');
  if (!run || !['running', 'queued'].includes(run.status)) return undefined;
  return { id: run.id, workspace_id: run.workspace_id, agent_id: run.agent_id, trigger: run.trigger };
}

/** Why a poll read its connection and failed, as told on the timeline: its first line. */
const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 500);

/** Records a poll's failure on the timeline when it differs from the last one told, and keeps the cursor. */
async function pollFailed(knex: Knex, trigger: TriggerRow, previous: string | null | undefined, reason: string) {
  await knex('trigger_cursors')
    .insert({ trigger_id: trigger.id, cursor: null, last_error: reason })
    .onConflict('trigger_id')
    .merge(['last_error', 'polled_at']);
  if (previous === reason) return;
  await recordEvent(knex, {
    workspace_id: trigger.workspace_id,
    agent_id: trigger.agent_id,
    kind: 'trigger_error',
    trigger_id: trigger.id,
    message: `${trigger.name}: could not read the connection: ${reason}`,
    details: { reason },
  });
}

const describe = (config: EventConfig, e: TriggerEvent) => `${config.event} ${e.id}`;

export function createEventTriggerActivities(deps: ActivityDeps) {
  const { knex } = deps;

  /**
   * Opens the run of one event; a run already opened for it (read again after a failure) is found, and started if it
   * has not ended. Files that come with the event are stored as the run's files before it starts, and listed in its
   * item (`files`). 'paused': the agent is not live, and the event must wait for it.
   */
  async function runOf(
    trigger: TriggerRow,
    config: EventConfig,
    event: TriggerEvent,
  ): Promise<{ run?: OpenedRun; runId: string | null } | 'paused'> {
    if (!(await isLive(knex, trigger))) return 'paused';
    const key = `event:${trigger.id}:${event.id}`;
    const files = (event.files ?? []).map((f, i) => ({ ...f, part: String(i) }));
    const inboxed = keepsMailInInbox(config) ? await keepReceivedMail(knex, trigger, config, event) : undefined;
    const item = {
      ...event.data,
      ...(inboxed ? { thread_id: inboxed.thread_id } : {}),
      ...(files.length > 0 ? { files: files.map((f) => describeFile(key, f)) } : {}),
    };
    const opened = await openTriggeredRun(knex, trigger, {
      input: JSON.stringify([item]),
      idempotencyKey: key,
      because: `${describe(config, event)} happened`,
      event: { event: config.event, id: event.id },
      // Should the workflow that polled never start it, the web's start sweep does (once its files are stored).
      startPending: files.length === 0,
    });
    if ('skipped' in opened && !(await isLive(knex, trigger))) return 'paused'; // paused as it was being opened
    if (inboxed) await noteRunOfMail(knex, inboxed, 'skipped' in opened ? opened : { runId: opened.id });
    if ('skipped' in opened) return { runId: null };
    const save = runFileSaver(knex, opened.id, key);
    for (const file of files) await save(file);
    if (files.length > 0) await markStartPending(knex, opened.id);
    if (!opened.fresh) return { run: await startableRun(knex, opened.id), runId: opened.id };
    return {
      run: { id: opened.id, workspace_id: opened.workspace_id, agent_id: opened.agent_id, trigger: opened.trigger },
      runId: opened.id,
    };
  }

  /**
   * Adds the event to the trigger's open batch (once: its id is the delivery key), unless the door would refuse it:
   * 'paused' (the agent is not live, and the event must wait for it), or 'rejected' (its run could not read it: the
   * reason is on the timeline).
   */
  async function batchOf(trigger: TriggerRow, config: EventConfig, event: TriggerEvent) {
    const batch = config.batch!;
    const state = (await knex('agents').where({ id: trigger.agent_id }).first('state'))?.state;
    const asRead = { ...trigger, agent_state: state };
    if (refusalToRun(state && { state }, trigger.agent_id, 'event')) return 'paused';
    const inboxed = keepsMailInInbox(config) ? await keepReceivedMail(knex, trigger, config, event) : undefined;
    const data = inboxed ? { ...event.data, thread_id: inboxed.thread_id } : event.data;
    const refused = await refusalOfDelivery(knex, asRead, data);
    if (refused) {
      await recordSkipped(knex, trigger, refused.code, `${describe(config, event)} rejected (${refused.message})`, {
        event: { event: config.event, id: event.id },
      });
      return 'rejected';
    }
    const temporal = deps.temporal;
    if (!temporal) throw new Error('batching event triggers need the worker to have a Temporal client');
    try {
      await acceptIntoBatch({ knex, temporal, taskQueue: activityInfo().taskQueue }, trigger, batch, {
        key: event.id,
        data,
      });
    } catch (err) {
      if (!(err instanceof DuplicateDelivery)) throw err;
    }
    return 'batched';
  }

  /** One poll of an event trigger: the runs it opened, for the workflow to start. */
  async function pollOnce(triggerId: string): Promise<{ runs: OpenedRun[]; events: number }> {
    const trigger = await findTrigger(knex, triggerId);
    if (!trigger || trigger.kind !== 'event') return { runs: [], events: 0 };
    if (!(await isLive(knex, trigger))) return { runs: [], events: 0 }; // its schedule is being paused
    const config = eventConfigSchema.parse(trigger.config);
    const saved = await loadCursor(knex, trigger.id);
    await forgetOldEvents(knex, trigger.id);
    let read: EventBatch;
    try {
      read = await pollEvents(deps, trigger.workspace_id, config, saved?.cursor ?? undefined, {
        known: async (ids) => new Set((await handledEvents(knex, trigger.id, ids)).keys()),
      });
    } catch (err) {
      const reason = reasonOf(err);
      await pollFailed(knex, trigger, saved?.last_error, reason);
      // The next interval polls again; a retry now would only repeat the same failure.
      throw ApplicationFailure.nonRetryable(reason, 'EventPollFailed');
    }
    const handled = await handledEvents(
      knex,
      trigger.id,
      read.events.map((e) => e.id),
    );
    const runs: OpenedRun[] = [];
    // How far the cursor may move: to the end, unless the poll stops at an event that must wait for the agent.
    let reached: string | undefined = read.cursor;
    for (const [i, event] of read.events.entries()) {
      if (handled.has(event.id)) {
        // Read again (a retried poll, or one that stopped at a pause): its run, opened by an earlier attempt that
        // may have failed before it was started, starts now; what it started nothing for stays so.
        const runId = handled.get(event.id);
        const run = runId ? await startableRun(knex, runId) : undefined;
        if (run) runs.push(run);
        continue;
      }
      if (config.filter && !matches(config.filter, event.data)) {
        await recordEvent(knex, {
          workspace_id: trigger.workspace_id,
          agent_id: trigger.agent_id,
          kind: 'trigger_skipped',
          trigger_id: trigger.id,
          message: `${trigger.name}: ${describe(config, event)}, skipped (filtered out by the trigger's conditions)`,
          details: { reason: 'filtered_out', event: { event: config.event, id: event.id } },
        });
        await markHandled(knex, trigger.id, event.id, null);
        deliveries.inc({ source: 'event', outcome: 'filtered_out' });
        continue;
      }
      let outcome: { run?: OpenedRun; runId: string | null } | 'paused';
      let taken: 'batched' | 'rejected' | undefined;
      if (config.batch) {
        const batched = await batchOf(trigger, config, event);
        outcome = batched === 'paused' ? 'paused' : { runId: null };
        if (batched !== 'paused') taken = batched;
      } else outcome = await runOf(trigger, config, event);
      if (outcome === 'paused') {
        // Paused while this poll was opening runs: the cursor stops just before this event (where the last one
        // handled says it may; else where the poll began), and what is left comes after the resume.
        reached = i > 0 ? read.events[i - 1].cursor : undefined;
        break;
      }
      await markHandled(knex, trigger.id, event.id, outcome.runId);
      // Without a run or a batch, the event was turned away (the plan's runs used up, say).
      deliveries.inc({ source: 'event', outcome: taken ?? (outcome.runId ? 'accepted' : 'rejected') });
      if (outcome.run) runs.push(outcome.run);
    }
    if (reached !== undefined) await saveCursor(knex, trigger.id, saved?.cursor ?? null, reached);
    return { runs, events: read.events.length };
  }

  return {
    /**
     * One poll of an event trigger: the runs it opened, for the workflow to start. Its schedule starts each poll as a
     * workflow of its own, so each poll is a trace of its own, which the runs it starts join (their trace_id).
     */
    pollEventTrigger: ({ triggerId }: { triggerId: string }) =>
      inSpan(
        'event poll',
        { 'cadre.trigger.id': triggerId },
        async (span) => {
          const polled = await pollOnce(triggerId);
          span.setAttributes({ 'cadre.poll.events': polled.events, 'cadre.poll.runs': polled.runs.length });
          return polled;
        },
        { kind: 'consumer' },
      ),

    /**
     * Where the trigger starts again when its agent is resumed with `skip_missed`: the connection's position now, as
     * a trigger's first poll marks it (schedules/event-marks.ts writes it with the resume).
     */
    async markEventTrigger({ triggerId }: { triggerId: string }): Promise<string | null> {
      const trigger = await findTrigger(knex, triggerId);
      if (!trigger || trigger.kind !== 'event') return null;
      const config = eventConfigSchema.parse(trigger.config);
      try {
        return (await pollEvents(deps, trigger.workspace_id, config, undefined)).cursor;
      } catch (err) {
        throw ApplicationFailure.nonRetryable(reasonOf(err), 'EventMarkFailed');
      }
    },
  };
}
