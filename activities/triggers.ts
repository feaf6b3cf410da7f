// The trigger fires that happen inside the engine, as activities: a schedule's fire, a batch of deliveries whose
// window closed, and chains. Each is services/triggers/fires.ts over the one door (services/runs/start.ts); the
// workflow that called starts the opened run as its child.
import { closeBatch, setBatchRun } from '../db/deliveries';
import { findTrigger } from '../db/triggers';
import { scheduleConfigSchema, scheduleInputOf } from '../model/trigger';
import {
  chainedRunOpener,
  openTriggeredRun,
  withoutFresh,
  type Opened,
  type OpenedRun,
} from '../services/triggers/fires';
import { batchRunInput } from '../services/triggers/deliveries';
import { loadRun, type ActivityDeps } from './deps';
import { setActiveSpanAttributes } from '../services/telemetry/tracing';

export type { OpenedRun };
export { chainedRunOpener, runResults } from '../services/triggers/fires';

export function createTriggerActivities({ knex }: ActivityDeps) {
  const openChained = chainedRunOpener({ knex });
  return {
    /**
     * A Temporal Schedule starts the fire's workflow with no trace to continue: each fire is a trace of its own,
     * rooted at that workflow's span, which the run it starts as its child joins. This activity's span names both.
     */
    async openScheduledRun({ triggerId, fireId }: { triggerId: string; fireId: string }): Promise<Opened> {
      setActiveSpanAttributes({ 'cadre.trigger.id': triggerId, 'cadre.trigger.kind': 'schedule' });
      const trigger = await findTrigger(knex, triggerId);
      if (!trigger || trigger.kind !== 'schedule') return { skipped: 'the trigger was deleted' };
      const config = scheduleConfigSchema.parse(trigger.config);
      // Temporal names each fire's workflow "<action workflow id>-<scheduled time>" (RFC 3339).
      const firedAt = new Date(fireId.slice(`scheduled-${triggerId}-`.length));
      const opened = await openTriggeredRun(knex, trigger, {
        // The schedule's input, or none: the run is then one empty item (activities/input-parsing.ts), so the agent
        // runs at every fire. When it fired is the run's fired_at, not part of its input.
        input: scheduleInputOf(config) ?? '',
        idempotencyKey: `schedule:${fireId}`,
        because: 'the schedule fired',
        firedAt: Number.isNaN(firedAt.getTime()) ? undefined : firedAt,
        skippedRunWhenNotLive: true,
      });
      if (!('skipped' in opened)) setActiveSpanAttributes({ 'cadre.run.id': opened.id });
      return withoutFresh(opened);
    },

    /** Closes a batch of deliveries and opens its run, one item per delivery (idempotent: a retry finds it). */
    async openBatchRun({ batchId }: { batchId: string }): Promise<Opened> {
      const batch = await closeBatch(knex, batchId);
      if (!batch || batch.items.length === 0) return { skipped: 'no deliveries' };
      const trigger = await findTrigger(knex, batch.triggerId);
      if (!trigger) return { skipped: 'the trigger was deleted' };
      const items = await batchRunInput(knex, trigger, batchId, batch.items);
      if (items.length === 0) return { skipped: 'no delivery its agent can read' };
      const n = items.length;
      const opened = await openTriggeredRun(knex, trigger, {
        input: JSON.stringify(items),
        idempotencyKey: `batch:${batchId}`,
        because: `a batch of ${n} ${n === 1 ? 'delivery' : 'deliveries'} closed`,
        event: { batch_id: batchId, deliveries: n },
      });
      if (!('skipped' in opened)) await setBatchRun(knex, batchId, opened.id);
      return withoutFresh(opened);
    },

    /** Opens a run of every agent chained to this run's agent whose conditions the finished run meets. */
    openChainedRuns: async ({ runId }: { runId: string }): Promise<OpenedRun[]> =>
      openChained(await loadRun(knex, runId)),
  };
}
