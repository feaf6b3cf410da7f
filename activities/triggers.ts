// Trigger fires that happen inside the engine: a schedule's fire, a batch of deliveries whose window closed, and
// chains (agent A finished → run agent B).
// Each opens the run (or records in the agent's timeline why it did not) and hands the workflow back what it
// needs to start it; the workflow starts the run as its child, so the start is durable and happens once.
import type { Knex } from 'knex';
import type { AgentRow } from '../db/agents';
import { openRun, openSkippedRun } from '../db/open-run';
import { recordRunEnded, recordRunOpened } from '../services/telemetry/metrics';
import { appendRunLog } from '../db/run-progress';
import type { Trigger } from '../db/runs';
import { closeBatch, setBatchRun } from '../db/deliveries';
import { recordEvent } from '../db/timeline';
import { chainTriggersFrom, findTrigger, type TriggerRow } from '../db/triggers';
import { getWorkspace } from '../db/workspaces';
import { matches } from '../workflows/interpreter';
import { chainConfigSchema, scheduleConfigSchema, scheduleInputOf } from '../model/trigger';
import { loadRun, type ActivityDeps, type RunRow } from './deps';
import { currentTraceId, setActiveSpanAttributes } from '../services/telemetry/tracing';

/** What a workflow needs to start an opened run as its child. */
export interface OpenedRun {
  id: string;
  workspace_id: string;
  agent_id: string;
  trigger: Trigger;
}

type Opened = OpenedRun | { skipped: string };

/** `fresh`: this call opened the run (false when a retried activity finds the run its first attempt opened). */
type OpenedHere = (OpenedRun & { fresh: boolean }) | { skipped: string };

export async function openTriggeredRun(
  knex: Knex,
  trigger: TriggerRow,
  req: {
    input: string;
    idempotencyKey: string;
    because: string;
    event?: Record<string, unknown>;
    /** A schedule's fire: its scheduled time, kept on the run. */
    firedAt?: Date;
    /** A fire that finds the agent not live still makes a run, ended `skipped` (a schedule's: see openSkippedRun). */
    skippedRunWhenNotLive?: boolean;
    /** The web's start sweep starts the run should its workflow never start (api/run-dispatch.ts). */
    startPending?: boolean;
  },
): Promise<OpenedHere> {
  const skip = async (reason: string, why: string): Promise<OpenedHere> => {
    await recordEvent(knex, {
      workspace_id: trigger.workspace_id,
      agent_id: trigger.agent_id,
      kind: 'trigger_skipped',
      trigger_id: trigger.id,
      message: `${trigger.name}: ${req.because}, skipped (${why})`,
      details: { reason, ...(req.event ? { event: req.event } : {}) },
    });
    return { skipped: why };
  };
  const agent: AgentRow | undefined = await knex('agents').where({ id: trigger.agent_id }).first();
  const workspace = await getWorkspace(knex, trigger.workspace_id);
  if (!agent || !workspace) return { skipped: 'the agent no longer exists' };
  if (agent.state !== 'live' && req.skippedRunWhenNotLive) {
    const why = `the agent was ${agent.state} when the schedule fired, so it did nothing`;
    const run = await openSkippedRun(knex, {
      workspace,
      agent,
      input: req.input,
      trigger: trigger.kind as Trigger,
      triggerId: trigger.id,
      firedAt: req.firedAt,
      idempotencyKey: req.idempotencyKey,
      why,
    });
    // Opened for real by an earlier attempt, before the pause: the run's first step finds the agent paused.
    if (run.status === 'running')
      return {
        id: run.runId,
        workspace_id: workspace.id,
        agent_id: agent.id,
        trigger: trigger.kind as Trigger,
        fresh: false,
      };
    if (run.fresh) {
      recordRunOpened(agent.id, trigger.kind);
      recordRunEnded(agent.id, 'skipped', 0, { done: 0, failed: 0, needs_review: 0, skipped: 0 });
      await appendRunLog(knex, [{ run_id: run.runId, level: 'warn', message: `run skipped: ${why}` }]);
      await recordEvent(knex, {
        workspace_id: trigger.workspace_id,
        agent_id: trigger.agent_id,
        kind: 'trigger_skipped',
        trigger_id: trigger.id,
        run_id: run.runId,
        message: `${trigger.name}: ${req.because}, skipped (the agent is ${agent.state})`,
        details: { reason: 'paused', ...(req.event ? { event: req.event } : {}) },
      });
    }
    return { skipped: `the agent is ${agent.state}` };
  }
  if (agent.state !== 'live') return skip('paused', `the agent is ${agent.state}`);

  const kind = trigger.kind as Trigger;
  const opened = await openRun(knex, {
    workspace,
    agent,
    input: req.input,
    trigger: kind,
    triggerId: trigger.id,
    idempotencyKey: req.idempotencyKey,
    firedAt: req.firedAt,
    // A fire is named by its key: a retry that reads its event (or its fire) differently finds the same run.
    keyNamesRun: true,
    startPending: req.startPending,
    traceId: currentTraceId(),
  });
  switch (opened.outcome) {
    case 'allowance_exhausted':
      return skip('plan_allowance', `the ${workspace.plan} plan's runs for this month are used up`);
    case 'key_in_flight':
      // An event's run being opened by another attempt of its poll, which may never report it: tried again, this
      // attempt finds the run and starts it.
      if (kind === 'event') throw new Error(`the run of ${req.because} is being opened by another attempt`);
      return skip('duplicate', 'this fire was already handled');
    case 'key_reused':
      return skip('duplicate', 'this fire was already handled');
    case 'replayed': // a retried activity: the run was opened by the first attempt
      return { id: opened.runId, workspace_id: workspace.id, agent_id: agent.id, trigger: kind, fresh: false };
    case 'agent_changed': // paused or edited since it was read just above: the retry reads it again
      throw new Error(`the agent ${agent.id} changed while its run was being opened`);
  }
  recordRunOpened(agent.id, kind);
  await recordEvent(knex, {
    workspace_id: trigger.workspace_id,
    agent_id: trigger.agent_id,
    kind: 'trigger_fired',
    trigger_id: trigger.id,
    run_id: opened.run.id,
    message: `${trigger.name}: ${req.because}, started a run`,
    details: req.event ? { event: req.event } : {},
  });
  return { id: opened.run.id, workspace_id: workspace.id, agent_id: agent.id, trigger: kind, fresh: true };
}

export const withoutFresh = (o: OpenedHere): Opened =>
  'skipped' in o ? o : { id: o.id, workspace_id: o.workspace_id, agent_id: o.agent_id, trigger: o.trigger };

/** A finished run's results as the next agent's input: what its output nodes collected, else its items. */
export async function runResults(knex: Knex, runId: string): Promise<unknown[]> {
  const collected = await knex('run_items')
    .where({ run_id: runId })
    .whereNotNull('output_node')
    .orderBy('seq')
    .pluck('output');
  if (collected.length > 0) return collected;
  return knex('run_items').where({ run_id: runId, status: 'done' }).orderBy('seq').pluck('data');
}

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
      const n = batch.items.length;
      const opened = await openTriggeredRun(knex, trigger, {
        input: JSON.stringify(batch.items),
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

/** Opens the chained runs of a finished run whose row (with its final status) the caller has read. */
export function chainedRunOpener({ knex }: Pick<ActivityDeps, 'knex'>) {
  return async (run: RunRow): Promise<OpenedRun[]> => {
    const runId = run.id;
    if (run.trigger === 'test') return []; // a test run is not the agent doing its work
    const triggers = await chainTriggersFrom(knex, run.agent_id);
    if (triggers.length === 0) return [];
    const counts = await knex('runs').where({ id: runId }).first('total', 'done', 'failed', 'needs_review');
    const source = await knex('agents').where({ id: run.agent_id }).first('name');
    const event = { run_id: runId, agent_id: run.agent_id, status: run.status, counts };
    const results = await runResults(knex, runId);

    const started: OpenedRun[] = [];
    for (const trigger of triggers) {
      const config = chainConfigSchema.parse(trigger.config);
      const because = `${source?.name ?? 'the source agent'} finished ${run.status}`;
      if (!config.on_statuses.includes(run.status as (typeof config.on_statuses)[number])) continue;
      if (config.filter && !matches(config.filter, { ...event, outputs: results })) {
        await recordEvent(knex, {
          workspace_id: trigger.workspace_id,
          agent_id: trigger.agent_id,
          kind: 'trigger_skipped',
          trigger_id: trigger.id,
          message: `${trigger.name}: ${because}, skipped (filtered out by the trigger's conditions)`,
          details: { reason: 'filtered_out', event },
        });
        continue;
      }
      const opened = await openTriggeredRun(knex, trigger, {
        input: JSON.stringify(results),
        idempotencyKey: `chain:${trigger.id}:${runId}`,
        because,
        event,
      });
      if ('skipped' in opened) continue;
      started.push(withoutFresh(opened) as OpenedRun);
      if (!opened.fresh) continue;
      await recordEvent(knex, {
        workspace_id: run.workspace_id,
        agent_id: run.agent_id,
        kind: 'chain_fired',
        run_id: runId,
        trigger_id: trigger.id,
        message: `this run's completion started a run of another agent (chain "${trigger.name}")`,
        details: { started_run_id: opened.id, target_agent_id: trigger.agent_id },
      });
    }
    return started;
  };
}
