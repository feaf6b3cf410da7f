// The public doors of triggers, reached without an API key: webhook deliveries (authenticated by their
// signature) and form definitions and submissions (public by design, rate limited per client). Each checks what
// only HTTP knows (signature, body, rate limit, the form's fields) and hands the delivery to
// services/triggers/deliveries.ts, which refuses, filters, batches or starts its run through the one door.
import express, { Router, type RequestHandler, type Response } from 'express';
import { anyObject, obj, ref, type Route } from '../openapi-schemas';
import type { SecretBox } from '../../db/secret-box';
import { findTriggerWithAgentState } from '../../db/triggers';
import { formConfigSchema, validateSubmission, webhookConfigSchema } from '../../model/trigger';
import { ApiError } from '../problem';
import { RateLimiter } from '../rate-limit';
import type { RunServiceDeps } from '../../services/runs/start';
import { receiveDelivery, type DeliveryOutcome } from '../../services/triggers/deliveries';
import { runJson, type Links } from '../../services/runs/json';
import type { RouteDeps } from './agents';
import { checkBody, jsonBody, param } from '../validation';
import { verifyWebhook } from '../../services/triggers/webhook-signature';
import { deliveries } from '../../services/telemetry/metrics';

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

  /** A run started (202 with the run), a delivery batched (202) or filtered out (200). */
  const answer = (res: Response, outcome: DeliveryOutcome) => {
    if (outcome.status === 'started') {
      res
        .status(202)
        .location(`/v1/runs/${outcome.run.id}`)
        .json({ status: 'started', run_id: outcome.run.id, run: runJson(outcome.run, deps.links) });
      return;
    }
    res.locals.deliveryOutcome = outcome.status === 'accepted' ? 'batched' : 'filtered_out';
    if (outcome.status === 'accepted')
      res.status(202).json({ status: 'accepted', delivery_id: outcome.deliveryId, run_id: null, run: null });
    else
      res
        .status(200)
        .json({ status: 'filtered_out', run: null, detail: "the trigger's filter conditions did not match" });
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
    const config = webhookConfigSchema.parse(trigger.config);
    const outcome = await receiveDelivery(deps, trigger, config.batch, config.filter, {
      data: event,
      input: raw.toString('utf8'),
      key: check.id,
      what: `delivery ${check.id}`,
      kindName: 'webhook delivery',
    });
    answer(res, outcome);
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
    // Each submission is its own run (or item), with no key: the same values twice are two submissions.
    const outcome = await receiveDelivery(deps, trigger, config.batch, config.filter, {
      data,
      input: JSON.stringify(data),
      what: 'a submission',
      kindName: 'form submission',
    });
    answer(res, outcome);
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

/** A delivery that started its run, or (a micro-batching trigger) was stored to join the next batch's run. */
const hookAccepted = {
  oneOf: [
    obj({ status: { const: 'started' }, run_id: { type: 'string', format: 'uuid' }, run: ref('Run') }),
    obj({
      status: { const: 'accepted' },
      delivery_id: { type: 'string', format: 'uuid' },
      run_id: { type: 'null' },
      run: { type: 'null' },
    }),
  ],
};
/** A webhook delivery or form submission that the trigger's filter conditions turned away. */
const filteredOut = obj({ status: { const: 'filtered_out' }, run: { type: 'null' }, detail: { type: 'string' } });

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const hookRouteDocs: Route[] = [
  {
    method: 'post',
    path: '/hooks/{id}',
    id: 'deliverWebhook',
    summary: 'A webhook delivery (Standard Webhooks signature: webhook-id, webhook-timestamp, webhook-signature)',
    scope: 'public',
    body: anyObject,
    ok: {
      202: hookAccepted,
      200: filteredOut,
    },
    errors: [400, 401, 404, 409, 413, 422, 429, 503],
  },
  {
    method: 'get',
    path: '/forms/{id}',
    id: 'getForm',
    summary: "A form trigger's public definition",
    scope: 'public',
    ok: { 200: ref('FormDefinition') },
    errors: [404],
  },
  {
    method: 'post',
    path: '/forms/{id}/submissions',
    id: 'submitForm',
    summary: 'Submit a form (422 names each field; rate limited per client)',
    scope: 'public',
    body: anyObject,
    ok: {
      202: hookAccepted,
      200: filteredOut,
    },
    errors: [400, 404, 409, 413, 415, 422, 429, 503],
  },
];
