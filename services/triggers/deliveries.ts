// Deliveries: what a trigger receives from outside (a webhook's delivery, a form's submission, an event an event
// trigger read) on its way to a run. A trigger without a batch starts the delivery's run through the one door
// (services/runs/start.ts); a micro-batching one stores it in its open batch (db/deliveries.ts), starts the batch's
// window (workflows/delivery-batch.ts) and closes it early when full. Either way a delivery is refused the way the
// door refuses a run, when it arrives: the agent not live, or an input its run could not read (the item checked by
// the agent's input node as the batch's run will read it). A webhook or a form answers the refusal as a problem; an
// event trigger records it on the agent's timeline.
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { getAgentHint, getVersion, rereadAgent, type AgentState } from '../../db/agents';
import { acceptDelivery, DuplicateDelivery, itemOfDelivery } from '../../db/deliveries';
import type { RunRecord, Trigger } from '../../db/runs';
import { recordEvent } from '../../db/timeline';
import type { TriggerRow } from '../../db/triggers';
import { getWorkspace } from '../../db/workspaces';
import type { Conditions } from '../../model/agent';
import { runPriority } from '../../model/run-identity';
import type { DeliveryBatchConfig } from '../../model/trigger';
import { matches } from '../../model/interpreter';
import { batchFullSignal, batchWorkflowId } from '../../workflows/contracts';
import type { deliveryBatch } from '../../workflows/delivery-batch';
import { ApiError } from '../errors';
import { deliveries } from '../telemetry/metrics';
import { inSpan } from '../telemetry/tracing';
import { refusalOfInput, refusalToRun, startRun, type RunServiceDeps } from '../runs/start';

/** A trigger with its agent's state as read with it (db/triggers.ts findTriggerWithAgentState). */
export type TriggerWithAgentState = TriggerRow & { agent_state: AgentState };

/** A note on the agent's timeline that the trigger received something and started nothing. */
export function recordSkipped(
  knex: Knex,
  trigger: TriggerRow,
  reason: string,
  message: string,
  details: Record<string, unknown> = {},
) {
  return recordEvent(knex, {
    workspace_id: trigger.workspace_id,
    agent_id: trigger.agent_id,
    kind: 'trigger_skipped',
    trigger_id: trigger.id,
    message: `${trigger.name}: ${message}`,
    details: { reason, ...details },
  });
}

/**
 * The door's refusal of one delivery of a batching trigger, checked when it arrives: the agent not live, or an item
 * the agent's input node cannot read as one of the batch's run. Undefined: it may be taken.
 */
export async function refusalOfDelivery(knex: Knex, trigger: TriggerWithAgentState, data: unknown) {
  const kind = trigger.kind as Trigger;
  const refused = refusalToRun({ state: trigger.agent_state }, trigger.agent_id, kind);
  if (refused) return refused;
  // The version as read a moment ago: a batch's items are checked again by the version its run opens on.
  const agent = await getAgentHint(knex, trigger.workspace_id, trigger.agent_id);
  const spec = agent && (await getVersion(knex, agent.id, agent.current_version));
  // The delivery's id is not known before it is stored; a placeholder reads the same.
  return spec && refusalOfInput(spec, JSON.stringify([itemOfDelivery(data, 'delivery')]), kind);
}

/**
 * The items of a closed batch its run is opened with: those the agent's input node reads, each as it will read it.
 * One it cannot (the agent was edited after the delivery was taken) is left out before the run opens, marked
 * rejected with the reason on the agent's timeline.
 */
export async function batchRunInput(
  knex: Knex,
  trigger: TriggerRow,
  batchId: string,
  items: Record<string, unknown>[],
): Promise<Record<string, unknown>[]> {
  const agent = await rereadAgent(knex, trigger.workspace_id, trigger.agent_id);
  const spec = agent && (await getVersion(knex, agent.id, agent.current_version));
  if (!spec) return items; // the door refuses the run itself
  const readable: Record<string, unknown>[] = [];
  for (const item of items) {
    const refused = refusalOfInput(spec, JSON.stringify([item]), trigger.kind as Trigger);
    if (!refused) {
      readable.push(item);
      continue;
    }
    deliveries.inc({ source: trigger.kind, outcome: 'rejected' });
    await recordSkipped(
      knex,
      trigger,
      refused.code,
      `delivery ${String(item.delivery_id)} rejected (${refused.message})`,
      {
        delivery_id: item.delivery_id,
        batch_id: batchId,
      },
    );
  }
  return readable;
}

export interface BatchDeps {
  knex: Knex;
  temporal: Client;
  /** Where the batch's window workflow runs. */
  taskQueue: string;
}

/**
 * Stores a delivery in its trigger's open batch: the batch's window starts with its first delivery, and a full batch
 * closes at once. Throws DuplicateDelivery when its key was taken before.
 */
export async function acceptIntoBatch(
  deps: BatchDeps,
  trigger: TriggerRow,
  batch: DeliveryBatchConfig,
  delivery: { key: string | null; data: unknown },
) {
  // A batch is a trace of its own (linked to its first delivery's request), which its run joins.
  const accepted = await acceptDelivery(deps.knex, trigger, batch, delivery, (batchId) =>
    inSpan(
      'delivery batch',
      { 'cadre.trigger.id': trigger.id, 'cadre.trigger.kind': trigger.kind, 'cadre.batch.id': batchId },
      async () => {
        await deps.temporal.workflow.start<typeof deliveryBatch>('deliveryBatch', {
          workflowId: batchWorkflowId(batchId),
          taskQueue: deps.taskQueue,
          args: [{ batchId, windowMs: batch.max_wait_ms }],
          priority: runPriority(trigger),
        });
      },
      { newTrace: true, kind: 'consumer' },
    ),
  );
  if (accepted.full) {
    // A lost signal only delays the batch to the end of its window.
    await deps.temporal.workflow
      .getHandle(batchWorkflowId(accepted.batchId))
      .signal(batchFullSignal)
      .catch(() => undefined);
  }
  return accepted;
}

/** How a delivery was taken: a run started, stored in a batch, or filtered out by the trigger's conditions. */
export type DeliveryOutcome =
  { status: 'started'; run: RunRecord } | { status: 'accepted'; deliveryId: string } | { status: 'filtered_out' };

export interface ReceivedDelivery {
  /** The event the trigger's filter reads, and a batch stores. */
  data: unknown;
  /** The run's input when it starts one of its own (a webhook's exact body). */
  input: string;
  /** A webhook's webhook-id: the same one again is refused. */
  key?: string;
  /** How the timeline names it ("delivery msg_1", "a submission"). */
  what: string;
  /** "webhook delivery", "form submission": what the refusal of a paused agent names. */
  kindName: string;
}

/**
 * A webhook's delivery or a form's submission, its signature or fields already checked: refused (ApiError: a
 * duplicate, the agent not live, an input its run could not read, anything else the door refuses), filtered out,
 * stored in the trigger's batch, or started as a run through the door.
 */
export async function receiveDelivery(
  deps: RunServiceDeps,
  trigger: TriggerWithAgentState,
  batch: DeliveryBatchConfig | undefined,
  filter: Conditions | undefined,
  delivery: ReceivedDelivery,
): Promise<DeliveryOutcome> {
  const { knex } = deps;
  const runKey = delivery.key && `webhook:${trigger.id}:${delivery.key}`;
  const duplicate = async (earlierRunId: string | null | undefined, as?: string) => {
    await recordSkipped(knex, trigger, 'duplicate', `delivery ${delivery.key} received again, skipped (duplicate)`, {
      delivery_id: delivery.key,
    });
    const detail = as
      ? `delivery ${delivery.key} was already received (as ${as}); it is not taken again`
      : `delivery ${delivery.key} was already received and started run ${earlierRunId}; it is not run again`;
    return new ApiError(409, 'duplicate_delivery', detail, {}, { run_id: earlierRunId ?? null });
  };
  const earlierRun = (key: string) =>
    knex('runs').where({ workspace_id: trigger.workspace_id, idempotency_key: key }).first('id');
  // A batched delivery stored before is found by the insert itself (one query fewer for every other delivery).
  const earlier = !batch && runKey ? await earlierRun(runKey) : undefined;
  if (earlier) throw await duplicate(earlier.id);

  const refused = batch
    ? await refusalOfDelivery(knex, trigger, delivery.data)
    : refusalToRun({ state: trigger.agent_state }, trigger.agent_id, trigger.kind as Trigger);
  if (refused?.code === 'agent_not_live') {
    const state = (refused.extra as { state: string }).state;
    await recordSkipped(knex, trigger, 'paused', `${delivery.kindName} refused, skipped (the agent is ${state})`);
    throw new ApiError(
      409,
      'agent_not_live',
      `the agent is ${state}; it takes ${delivery.kindName}s only while live`,
      {},
      { state },
    );
  }
  if (filter && !matches(filter, delivery.data)) {
    await recordSkipped(
      knex,
      trigger,
      'filtered_out',
      `${delivery.what} received, skipped (filtered out by the trigger's conditions)`,
    );
    return { status: 'filtered_out' };
  }
  if (refused) throw refused;

  if (batch) {
    try {
      const accepted = await acceptIntoBatch(
        { knex, temporal: deps.temporal, taskQueue: deps.temporalConfig.taskQueue },
        trigger,
        batch,
        { key: delivery.key ?? null, data: delivery.data },
      );
      return { status: 'accepted', deliveryId: accepted.id };
    } catch (err) {
      if (err instanceof DuplicateDelivery) throw await duplicate(err.runId, err.deliveryId);
      throw err;
    }
  }

  // Each delivery that starts a run is a trace of its own (linked to the HTTP request's, which a sender's
  // traceparent may have joined to theirs), and the run joins it.
  return inSpan(
    trigger.kind === 'form' ? 'form submission' : 'webhook delivery',
    { 'cadre.trigger.id': trigger.id, 'cadre.trigger.kind': trigger.kind, 'cadre.agent.id': trigger.agent_id },
    async (): Promise<DeliveryOutcome> => {
      const workspace = (await getWorkspace(knex, trigger.workspace_id))!;
      // A hint: the door opens the run only if the agent is still live at this version.
      const agent = (await getAgentHint(knex, trigger.workspace_id, trigger.agent_id))!;
      const { run, created } = await startRun(deps, {
        workspace,
        agent,
        input: delivery.input,
        trigger: trigger.kind as 'webhook' | 'form',
        triggerId: trigger.id,
        idempotencyKey: runKey || undefined,
      });
      if (!created) throw await duplicate((await earlierRun(runKey!))?.id);
      await recordEvent(knex, {
        workspace_id: trigger.workspace_id,
        agent_id: trigger.agent_id,
        kind: 'trigger_fired',
        trigger_id: trigger.id,
        run_id: run.id,
        message: `${trigger.name}: ${delivery.what} received, started a run`,
      });
      return { status: 'started', run };
    },
    { newTrace: true, kind: 'consumer' },
  );
}
