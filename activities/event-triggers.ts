// An event trigger's poll (workflows/event-poll.ts): reads what happened since the trigger's cursor, opens a run per
// new event (or adds it to the trigger's open batch), then moves the cursor. Each event is acted on once however
// often it is read: its run's idempotency key (or its delivery key in a batch) is derived from the trigger and the
// event's id, so a poll that failed between opening runs and moving the cursor reads the same events again and
// starts nothing twice. A failing poll is told once on the agent's timeline, not at every interval.
import type { Knex } from 'knex';
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { acceptDelivery, DuplicateDelivery } from '../db/deliveries';
import { recordEvent } from '../db/timeline';
import { findTrigger, type TriggerRow } from '../db/triggers';
import { eventConfigSchema, type EventConfig } from '../model/trigger';
import { matches } from '../workflows/interpreter';
import { batchWorkflowId, batchFullSignal, type deliveryBatch } from '../workflows/delivery-batch';
import { runPriority } from '../model/run-identity';
import { pollEvents } from './connectors/events';
import type { EventBatch } from './connectors/connector';
import type { ActivityDeps } from './deps';
import { openTriggeredRun, type OpenedRun } from './triggers';
import { runFileId, runFileSaver } from './run-files';
import { keepReceivedMail, keepsMailInInbox, noteRunOfMail } from './inbox-mailbox';

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

async function saveCursor(knex: Knex, triggerId: string, cursor: string, lastError: string | null) {
  await knex('trigger_cursors')
    .insert({ trigger_id: triggerId, cursor, last_error: lastError, polled_at: knex.fn.now() })
    .onConflict('trigger_id')
    .merge(['cursor', 'last_error', 'polled_at']);
}

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
   * Opens the run of one event; a run already opened for it (read again after a failure) is opened once. Files that
   * come with the event are stored as the run's files before it starts, and listed in its item (`files`).
   */
  async function runOf(trigger: TriggerRow, config: EventConfig, event: TriggerEvent): Promise<OpenedRun | undefined> {
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
    });
    if (inboxed) await noteRunOfMail(knex, inboxed, 'skipped' in opened ? opened : { runId: opened.id });
    if ('skipped' in opened) return undefined;
    const save = runFileSaver(knex, opened.id, key);
    for (const file of files) await save(file);
    if (!opened.fresh) {
      // Read again after a failure: its run starts unless it already ran (the start is refused if it is going).
      const run = await knex('runs').where({ id: opened.id }).first('status');
      if (run && !['running', 'queued'].includes(run.status)) return undefined;
    }
    return { id: opened.id, workspace_id: opened.workspace_id, agent_id: opened.agent_id, trigger: opened.trigger };
  }

  /** Adds the event to the trigger's open batch (once: its id is the delivery key). */
  async function batchOf(trigger: TriggerRow, config: EventConfig, event: TriggerEvent) {
    const batch = config.batch!;
    const inboxed = keepsMailInInbox(config) ? await keepReceivedMail(knex, trigger, config, event) : undefined;
    const temporal = deps.temporal;
    if (!temporal) throw new Error('batching event triggers need the worker to have a Temporal client');
    try {
      const accepted = await acceptDelivery(
        knex,
        trigger,
        batch,
        { key: event.id, data: inboxed ? { ...event.data, thread_id: inboxed.thread_id } : event.data },
        async (batchId) => {
          await temporal.workflow.start<typeof deliveryBatch>('deliveryBatch', {
            workflowId: batchWorkflowId(batchId),
            taskQueue: activityInfo().taskQueue,
            args: [{ batchId, windowMs: batch.max_wait_ms }],
            priority: runPriority(trigger),
          });
        },
      );
      if (accepted.full)
        await temporal.workflow
          .getHandle(batchWorkflowId(accepted.batchId))
          .signal(batchFullSignal)
          .catch(() => undefined); // a lost signal only delays the batch to the end of its window
    } catch (err) {
      if (!(err instanceof DuplicateDelivery)) throw err;
    }
  }

  return {
    /** One poll of an event trigger: the runs it opened, for the workflow to start. */
    async pollEventTrigger({ triggerId }: { triggerId: string }): Promise<{ runs: OpenedRun[]; events: number }> {
      const trigger = await findTrigger(knex, triggerId);
      if (!trigger || trigger.kind !== 'event') return { runs: [], events: 0 };
      const agent = await knex('agents').where({ id: trigger.agent_id }).first('state');
      if (agent?.state !== 'live') return { runs: [], events: 0 }; // its schedule is being paused
      const config = eventConfigSchema.parse(trigger.config);
      const saved = await loadCursor(knex, trigger.id);
      let read: EventBatch;
      try {
        read = await pollEvents(deps, trigger.workspace_id, config, saved?.cursor ?? undefined);
      } catch (err) {
        const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 500);
        await pollFailed(knex, trigger, saved?.last_error, reason);
        // The next interval polls again; a retry now would only repeat the same failure.
        throw ApplicationFailure.nonRetryable(reason, 'EventPollFailed');
      }
      const runs: OpenedRun[] = [];
      for (const event of read.events) {
        if (config.filter && !matches(config.filter, event.data)) {
          await recordEvent(knex, {
            workspace_id: trigger.workspace_id,
            agent_id: trigger.agent_id,
            kind: 'trigger_skipped',
            trigger_id: trigger.id,
            message: `${trigger.name}: ${describe(config, event)}, skipped (filtered out by the trigger's conditions)`,
            details: { reason: 'filtered_out', event: { event: config.event, id: event.id } },
          });
          continue;
        }
        if (config.batch) await batchOf(trigger, config, event);
        else {
          const run = await runOf(trigger, config, event);
          if (run) runs.push(run);
        }
      }
      await saveCursor(knex, trigger.id, read.cursor, null);
      return { runs, events: read.events.length };
    },
  };
}
