// The public doors of triggers, reached without an API key: webhook deliveries (authenticated by their
// signature) and form definitions and submissions (public by design, rate limited per client).
import express, { Router, type RequestHandler, type Response } from 'express';
import { getAgentHint } from '../../db/agents';
import { acceptDelivery, DuplicateDelivery } from '../../db/deliveries';
import type { SecretBox } from '../../db/secret-box';
import { recordEvent } from '../../db/timeline';
import { findTriggerWithAgentState, type TriggerRow } from '../../db/triggers';
import { getWorkspace } from '../../db/workspaces';
import { matches } from '../../workflows/interpreter';
import {
  formConfigSchema,
  validateSubmission,
  webhookConfigSchema,
  type DeliveryBatchConfig,
} from '../../model/trigger';
import { batchFullSignal, batchWorkflowId, type deliveryBatch } from '../../workflows/delivery-batch';
import { runPriority } from '../../model/run-identity';
import type { Conditions } from '../../model/agent';
import { ApiError } from '../problem';
import { RateLimiter } from '../rate-limit';
import { startRun, type RunServiceDeps } from '../run-service';
import { runJson, type Links } from '../serialize';
import type { RouteDeps } from './agents';
import { checkBody, jsonBody, param } from '../validation';
import { verifyWebhook } from '../webhook-signature';
import { deliveries } from '../../services/telemetry/metrics';
import { inSpan } from '../../services/telemetry/tracing';

type PublicTrigger = NonNullable<Awaited<ReturnType<typeof findTriggerWithAgentState>>>;

export interface HookDeps extends RunServiceDeps, Pick<RouteDeps, 'budgetScope'> {
  secrets: SecretBox;
  links: Links;
  bodyLimit: string;
  /** Form submissions per client and form per minute. */
  formRateLimit?: number;
}

export function hookRoutes(deps: HookDeps): Router {
  const { knex } = deps;
  const r = Router();
  const formLimiter = new RateLimiter(knex, `${deps.budgetScope ?? ''}form`, deps.formRateLimit ?? 10, 60_000);

  // The agent's state comes with the trigger (one query per delivery); a run's start reads the agent itself.
  const loadTrigger = async (id: string, kind: 'webhook' | 'form') => {
    const trigger = await findTriggerWithAgentState(knex, id);
    if (!trigger || trigger.kind !== kind) throw new ApiError(404, `${kind}_not_found`, `no ${kind} ${id}`);
    return trigger;
  };

  const skipped = (trigger: TriggerRow, reason: string, message: string, details: Record<string, unknown> = {}) =>
    recordEvent(knex, {
      workspace_id: trigger.workspace_id,
      agent_id: trigger.agent_id,
      kind: 'trigger_skipped',
      trigger_id: trigger.id,
      message: `${trigger.name}: ${message}`,
      details: { reason, ...details },
    });

  const refuseUnlessLive = async (trigger: PublicTrigger, what: string) => {
    const state = trigger.agent_state;
    if (state === 'live') return;
    await skipped(trigger, 'paused', `${what} refused, skipped (the agent is ${state})`);
    throw new ApiError(
      409,
      'agent_not_live',
      `the agent is ${state}; it takes ${what}s only while live`,
      {},
      { state },
    );
  };

  /** Filter conditions decide whether an event starts a run; an event filtered out is answered 200. */
  const filteredOut = async (
    res: Response,
    trigger: TriggerRow,
    filter: Conditions | undefined,
    event: unknown,
    what: string,
  ) => {
    if (!filter || matches(filter, event)) return false;
    await skipped(trigger, 'filtered_out', `${what} received, skipped (filtered out by the trigger's conditions)`);
    res.locals.deliveryOutcome = 'filtered_out';
    res
      .status(200)
      .json({ status: 'filtered_out', run: null, detail: "the trigger's filter conditions did not match" });
    return true;
  };

  /**
   * Each delivery that starts a run is a trace of its own (linked to the HTTP request's, which a sender's traceparent
   * may have joined to theirs), and the run joins it.
   */
  const start = (res: Response, trigger: TriggerRow, input: string, key: string | undefined, what: string) =>
    inSpan(
      trigger.kind === 'form' ? 'form submission' : 'webhook delivery',
      { 'cadre.trigger.id': trigger.id, 'cadre.trigger.kind': trigger.kind, 'cadre.agent.id': trigger.agent_id },
      () => startDelivered(res, trigger, input, key, what),
      { newTrace: true, kind: 'consumer' },
    );
  const startDelivered = async (
    res: Response,
    trigger: TriggerRow,
    input: string,
    key: string | undefined,
    what: string,
  ) => {
    const workspace = (await getWorkspace(knex, trigger.workspace_id))!;
    // A hint: startRun opens the run only if the agent is still live at this version.
    const agent = (await getAgentHint(knex, trigger.workspace_id, trigger.agent_id))!;
    const { run, created } = await startRun(deps, {
      workspace,
      agent,
      input,
      trigger: trigger.kind as 'webhook' | 'form',
      triggerId: trigger.id,
      idempotencyKey: key,
    });
    if (!created) return false;
    await recordEvent(knex, {
      workspace_id: trigger.workspace_id,
      agent_id: trigger.agent_id,
      kind: 'trigger_fired',
      trigger_id: trigger.id,
      run_id: run.id,
      message: `${trigger.name}: ${what} received, started a run`,
    });
    res
      .status(202)
      .location(`/v1/runs/${run.id}`)
      .json({ status: 'started', run_id: run.id, run: runJson(run, deps.links) });
    return true;
  };

  /**
   * A micro-batching trigger: the delivery is stored in the trigger's open batch before it is acknowledged; the
   * batch's window starts with its first delivery, and a full batch closes at once.
   */
  const accept = async (
    res: Response,
    trigger: TriggerRow,
    batch: DeliveryBatchConfig,
    delivery: { key: string | null; data: unknown },
  ) => {
    // A batch is a trace of its own (linked to its first delivery's request), which its run joins.
    const openWindow = (batchId: string) =>
      inSpan(
        'delivery batch',
        { 'cadre.trigger.id': trigger.id, 'cadre.trigger.kind': trigger.kind, 'cadre.batch.id': batchId },
        () =>
          deps.temporal.workflow.start<typeof deliveryBatch>('deliveryBatch', {
            workflowId: batchWorkflowId(batchId),
            taskQueue: deps.temporalConfig.taskQueue,
            args: [{ batchId, windowMs: batch.max_wait_ms }],
            priority: runPriority(trigger),
          }),
        { newTrace: true, kind: 'consumer' },
      );
    const accepted = await acceptDelivery(knex, trigger, batch, delivery, async (batchId) => {
      await openWindow(batchId);
    });
    if (accepted.full) {
      // A lost signal only delays the batch to the end of its window.
      await deps.temporal.workflow
        .getHandle(batchWorkflowId(accepted.batchId))
        .signal(batchFullSignal)
        .catch(() => undefined);
    }
    res.locals.deliveryOutcome = 'batched';
    res.status(202).json({ status: 'accepted', delivery_id: accepted.id, run_id: null, run: null });
  };

  // Webhooks: the raw body is kept, since the signature covers its exact bytes.
  r.use('/hooks/:id', countDelivery('webhook'));
  r.post('/hooks/:id', express.raw({ type: () => true, limit: deps.bodyLimit }), async (req, res) => {
    const trigger = await loadTrigger(param(req, 'id'), 'webhook');
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const check = verifyWebhook(
      deps.secrets.open(trigger.secret_encrypted!),
      { id: req.get('webhook-id'), timestamp: req.get('webhook-timestamp'), signature: req.get('webhook-signature') },
      raw,
    );
    if (!check.ok) throw new ApiError(401, check.code, check.message);

    let event: unknown;
    try {
      event = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new ApiError(400, 'malformed_json', 'the webhook body must be JSON');
    }
    checkBody(event); // raw for the signature, so not parsed (and checked) by jsonBody
    const key = `webhook:${trigger.id}:${check.id}`;
    const duplicate = async () => {
      const earlier = await knex('runs')
        .where({ workspace_id: trigger.workspace_id, idempotency_key: key })
        .first('id');
      await skipped(trigger, 'duplicate', `delivery ${check.id} received again, skipped (duplicate)`, {
        delivery_id: check.id,
      });
      throw new ApiError(
        409,
        'duplicate_delivery',
        `delivery ${check.id} was already received and started run ${earlier?.id}; it is not run again`,
        {},
        { run_id: earlier?.id ?? null },
      );
    };
    const config = webhookConfigSchema.parse(trigger.config);
    if (config.batch) {
      const batchDuplicate = async (earlier: { id: string; run_id: string | null }) => {
        await skipped(trigger, 'duplicate', `delivery ${check.id} received again, skipped (duplicate)`, {
          delivery_id: check.id,
        });
        throw new ApiError(
          409,
          'duplicate_delivery',
          `delivery ${check.id} was already received (as ${earlier.id}); it is not taken again`,
          {},
          { run_id: earlier.run_id },
        );
      };
      // A delivery stored before is found by the insert itself (one query fewer for every other delivery).
      await refuseUnlessLive(trigger, 'webhook delivery');
      if (await filteredOut(res, trigger, config.filter, event, `delivery ${check.id}`)) return;
      try {
        return await accept(res, trigger, config.batch, { key: check.id, data: event });
      } catch (err) {
        if (err instanceof DuplicateDelivery) return batchDuplicate({ id: err.deliveryId, run_id: err.runId });
        throw err;
      }
    }
    if (await knex('runs').where({ workspace_id: trigger.workspace_id, idempotency_key: key }).first('id'))
      return duplicate();
    await refuseUnlessLive(trigger, 'webhook delivery');
    if (await filteredOut(res, trigger, config.filter, event, `delivery ${check.id}`)) return;
    if (!(await start(res, trigger, raw.toString('utf8'), key, `delivery ${check.id}`))) return duplicate();
  });

  r.get('/forms/:id', async (req, res) => {
    const trigger = await loadTrigger(param(req, 'id'), 'form');
    const config = formConfigSchema.parse(trigger.config);
    res.json({
      id: trigger.id,
      title: config.title,
      description: config.description,
      fields: config.fields,
      submit_label: config.submit_label,
      accepting: trigger.agent_state === 'live',
    });
  });

  r.use('/forms/:id/submissions', countDelivery('form'));
  r.post('/forms/:id/submissions', ...jsonBody(deps.bodyLimit), async (req, res) => {
    const trigger = await loadTrigger(param(req, 'id'), 'form');
    const wait = await formLimiter.take(`${trigger.id}:${req.ip}`);
    if (wait > 0) {
      throw new ApiError(429, 'rate_limited', `too many submissions from this client; try again in ${wait} s`, {
        'Retry-After': String(wait),
      });
    }
    const config = formConfigSchema.parse(trigger.config);
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body))
      throw new ApiError(422, 'invalid_submission', 'send the form values as a JSON object', {}, { errors: [] });
    const { data, errors } = validateSubmission(config.fields, req.body as Record<string, unknown>);
    if (errors.length > 0) {
      throw new ApiError(422, 'invalid_submission', errors.map((e) => e.message).join('; '), {}, { errors });
    }
    await refuseUnlessLive(trigger, 'form submission');
    if (await filteredOut(res, trigger, config.filter, data, 'a submission')) return;
    if (config.batch) return accept(res, trigger, config.batch, { key: null, data });
    await start(res, trigger, JSON.stringify(data), undefined, 'a submission'); // each submission is its own run
  });

  return r;
}

/**
 * Counts a delivery by how it was answered: accepted (a run started), batched, filtered_out, rejected (refused:
 * signature, duplicate, paused agent, bad body, rate limit) or failed (5xx).
 */
function countDelivery(source: 'webhook' | 'form'): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'POST') return next();
    res.once('finish', () => {
      const answered = res.statusCode;
      const outcome =
        answered >= 500 ? 'failed' : answered >= 400 ? 'rejected' : (res.locals.deliveryOutcome ?? 'accepted');
      deliveries.inc({ source, outcome });
    });
    next();
  };
}
