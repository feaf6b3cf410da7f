// Trigger fires that happen inside the engine: a schedule's fire, a batch of deliveries whose window closed, an
// event, and chains (agent A finished → run agent B). Each goes through the one door (services/runs/start.ts) and
// records in the agent's timeline what it did: started a run, or why not (the door's refusal, by its code). The
// workflow that asked starts the opened run as its child, so the start is durable and happens once.
import type { Knex } from 'knex';
import type { AgentRow } from '../../db/agents';
import type { Trigger } from '../../db/runs';
import { recordEvent } from '../../db/timeline';
import { chainTriggersFrom, type TriggerRow } from '../../db/triggers';
import { getWorkspace } from '../../db/workspaces';
import { matches } from '../../model/interpreter';
import { chainConfigSchema } from '../../model/trigger';
import { ApiError } from '../errors';
import { openRunForWorkflow, openSkippedFire } from '../runs/start';

/** What a workflow needs to start an opened run as its child. */
export interface OpenedRun {
  id: string;
  workspace_id: string;
  agent_id: string;
  trigger: Trigger;
}

export type Opened = OpenedRun | { skipped: string };

/** `fresh`: this call opened the run (false when a retried activity finds the run its first attempt opened). */
export type OpenedHere = (OpenedRun & { fresh: boolean }) | { skipped: string; reason?: string };

/** Why the door refused a fire, as the timeline's `reason`. */
const reasonOf = (err: ApiError) =>
  err.code === 'agent_not_live'
    ? 'paused'
    : err.code === 'plan_allowance_exhausted'
      ? 'plan_allowance'
      : err.code === 'idempotency_key_reused' || err.code === 'idempotency_key_in_flight'
        ? 'duplicate'
        : err.code;

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
    /** A fire that finds the agent not live still makes a run, ended `skipped` (a schedule's: see openSkippedFire). */
    skippedRunWhenNotLive?: boolean;
    /** The web's start sweep starts the run should its workflow never start (services/runs/dispatch.ts). */
    startPending?: boolean;
  },
): Promise<OpenedHere> {
  const skip = async (reason: string, why: string, runId?: string): Promise<OpenedHere> => {
    await recordEvent(knex, {
      workspace_id: trigger.workspace_id,
      agent_id: trigger.agent_id,
      kind: 'trigger_skipped',
      trigger_id: trigger.id,
      run_id: runId ?? null,
      message: `${trigger.name}: ${req.because}, skipped (${why})`,
      details: { reason, ...(req.event ? { event: req.event } : {}) },
    });
    return { skipped: why, reason };
  };
  const agent: AgentRow | undefined = await knex('agents').where({ id: trigger.agent_id }).first();
  const workspace = await getWorkspace(knex, trigger.workspace_id);
  if (!agent || !workspace) return { skipped: 'the agent no longer exists' };
  const kind = trigger.kind as Trigger;
  const asked = {
    workspace,
    agent,
    input: req.input,
    trigger: kind,
    triggerId: trigger.id,
    idempotencyKey: req.idempotencyKey,
    firedAt: req.firedAt,
  };

  if (agent.state !== 'live' && req.skippedRunWhenNotLive) {
    const why = `the agent was ${agent.state} when the schedule fired, so it did nothing`;
    const run = await openSkippedFire(knex, { ...asked, why });
    // Opened for real by an earlier attempt, before the pause: the run's first step finds the agent paused.
    if (run.status === 'running')
      return { id: run.runId, workspace_id: workspace.id, agent_id: agent.id, trigger: kind, fresh: false };
    if (run.fresh) await skip('paused', `the agent is ${agent.state}`, run.runId);
    return { skipped: `the agent is ${agent.state}`, reason: 'paused' };
  }

  let opened;
  try {
    // A fire is named by its key: a retry that reads its event (or its fire) differently finds the same run.
    opened = await openRunForWorkflow(knex, { ...asked, keyNamesRun: true, startPending: req.startPending });
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    // An event's run being opened by another attempt of its poll, which may never report it: tried again, this
    // attempt finds the run and starts it.
    if (err.code === 'idempotency_key_in_flight' && kind === 'event')
      throw new Error(`the run of ${req.because} is being opened by another attempt`);
    // Paused or edited meanwhile, twice: the activity's retry reads it again.
    if (err.code === 'agent_changing') throw new Error(`the agent ${agent.id} changed while its run was being opened`);
    const why =
      err.code === 'agent_not_live'
        ? `the agent is ${(err.extra as { state?: string }).state ?? 'not live'}`
        : err.code === 'plan_allowance_exhausted'
          ? `the ${workspace.plan} plan's runs for this month are used up`
          : reasonOf(err) === 'duplicate'
            ? 'this fire was already handled'
            : err.message;
    return skip(reasonOf(err), why);
  }
  const { run, created } = opened;
  if (!created) return { id: run.id, workspace_id: workspace.id, agent_id: agent.id, trigger: kind, fresh: false };
  await recordEvent(knex, {
    workspace_id: trigger.workspace_id,
    agent_id: trigger.agent_id,
    kind: 'trigger_fired',
    trigger_id: trigger.id,
    run_id: run.id,
    message: `${trigger.name}: ${req.because}, started a run`,
    details: req.event ? { event: req.event } : {},
  });
  return { id: run.id, workspace_id: workspace.id, agent_id: agent.id, trigger: kind, fresh: true };
}

export const withoutFresh = (o: OpenedHere): Opened =>
  'skipped' in o
    ? { skipped: o.skipped }
    : { id: o.id, workspace_id: o.workspace_id, agent_id: o.agent_id, trigger: o.trigger };

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

/** The finished run a chain fires on, as its row says (with its final status). */
export interface EndedRun {
  id: string;
  workspace_id: string;
  agent_id: string;
  trigger: string;
  status: string;
}

/** Opens the chained runs of a finished run whose row (with its final status) the caller has read. */
export function chainedRunOpener({ knex }: { knex: Knex }) {
  return async (run: EndedRun): Promise<OpenedRun[]> => {
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
