// Managing an agent's triggers (schedules, webhooks, forms, chains) and reading its activity timeline.
import { Router } from 'express';
import { jsonSchema, list, obj, ref, ts, type Route } from '../openapi-schemas';
import { ScheduleNotFoundError } from '@temporalio/client';
import type { AgentRow } from '../../db/agents';
import { listEvents } from '../../db/timeline';
import { getTrigger, listTriggers, setTriggerSecret, type TriggerRow } from '../../db/triggers';
import { scheduleConfigSchema, triggerInputSchema } from '../../model/trigger';
import { requirePermission } from '../auth';
import { loadAgent as loadAgentOr404 } from '../loaders';
import { ApiError } from '../problem';
import { scheduleIdOf } from '../../schedules/sync';
import {
  changeTrigger,
  checkedFireTimes,
  checkScheduleInputFormat,
  createTrigger,
  parseTriggerInput,
  removeTrigger,
  scheduleView,
  triggerJson,
  type TriggerServiceDeps,
} from '../../services/triggers/manage';
import { jsonBody, param, parseBody } from '../validation';
import { newWebhookSecret } from '../../services/triggers/webhook-signature';
import { parseQuery, queries } from '../query-params';

export function triggerRoutes(deps: TriggerServiceDeps & { bodyLimit: string }): Router {
  const { knex } = deps;
  const r = Router();
  const body = jsonBody(deps.bodyLimit);

  const loadAgent = (workspaceId: string, id: string) => loadAgentOr404(knex, workspaceId, id);
  const loadTrigger = async (workspaceId: string, id: string): Promise<{ trigger: TriggerRow; agent: AgentRow }> => {
    const trigger = await getTrigger(knex, workspaceId, id);
    if (!trigger) throw new ApiError(404, 'trigger_not_found', `no trigger ${id} in this workspace`);
    return { trigger, agent: await loadAgent(workspaceId, trigger.agent_id) };
  };

  r.get('/agents/:id/triggers', requirePermission('read'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const rows = await listTriggers(knex, agent.id);
    res.json({ data: await Promise.all(rows.map((t) => triggerJson(deps, t, agent))), next_cursor: null });
  });

  r.post('/agents/:id/triggers', requirePermission('manage'), ...body, async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const input = await parseTriggerInput(deps, agent, req.body);
    const { trigger, secret } = await createTrigger(deps, agent, input);
    res
      .status(201)
      .location(`/v1/triggers/${trigger.id}`)
      // A webhook's signing secret is shown this once; rotate it to see a new one.
      .json({ ...(await triggerJson(deps, trigger, agent)), ...(secret ? { secret } : {}) });
  });

  r.get('/triggers/:id', requirePermission('read'), async (req, res) => {
    const { trigger, agent } = await loadTrigger(req.auth!.workspace.id, param(req, 'id'));
    res.json(await triggerJson(deps, trigger, agent));
  });

  r.put('/triggers/:id', requirePermission('manage'), ...body, async (req, res) => {
    const { trigger, agent } = await loadTrigger(req.auth!.workspace.id, param(req, 'id'));
    const input = await parseTriggerInput(deps, agent, req.body);
    res.json(await triggerJson(deps, await changeTrigger(deps, agent, trigger, input), agent));
  });

  r.delete('/triggers/:id', requirePermission('manage'), async (req, res) => {
    const { trigger, agent } = await loadTrigger(req.auth!.workspace.id, param(req, 'id'));
    await removeTrigger(deps, agent, trigger);
    res.status(204).end();
  });

  r.post('/triggers/:id/rotate-secret', requirePermission('manage'), async (req, res) => {
    const { trigger, agent } = await loadTrigger(req.auth!.workspace.id, param(req, 'id'));
    if (trigger.kind !== 'webhook')
      throw new ApiError(409, 'not_a_webhook', `this is a ${trigger.kind} trigger; only webhooks have a secret`);
    const secret = newWebhookSecret();
    await setTriggerSecret(knex, trigger.id, deps.secrets.seal(secret));
    res.json({ ...(await triggerJson(deps, trigger, agent)), secret });
  });

  // "Run now" for a schedule: Temporal takes the schedule's action at once, with its overlap policy.
  r.post('/triggers/:id/fire', requirePermission('run'), async (req, res) => {
    const { trigger, agent } = await loadTrigger(req.auth!.workspace.id, param(req, 'id'));
    if (trigger.kind !== 'schedule')
      throw new ApiError(
        409,
        'not_a_schedule',
        `this is a ${trigger.kind} trigger; only schedules can be fired by hand`,
      );
    if (agent.state !== 'live')
      throw new ApiError(
        409,
        'agent_not_live',
        `the agent is ${agent.state}; its schedules fire only while it is live`,
        {},
        { state: agent.state },
      );
    try {
      await deps.temporal.schedule.getHandle(scheduleIdOf(trigger)).trigger();
    } catch (err) {
      if (err instanceof ScheduleNotFoundError)
        throw new ApiError(
          503,
          'schedule_missing',
          'the schedule is missing in Temporal; restart the service to reconcile it',
        );
      throw err;
    }
    res.status(202).json({ fired: true, trigger_id: trigger.id });
  });

  // The schedule builder's preview, before anything is saved: Temporal's own fire times for the spec, refused as
  // saving would refuse it.
  r.post('/schedules/preview', requirePermission('read'), ...body, async (req, res) => {
    const config = parseBody(scheduleConfigSchema, req.body);
    checkScheduleInputFormat(config);
    res.json(scheduleView(config, await checkedFireTimes(deps, config)));
  });

  r.get('/agents/:id/timeline', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.agentTimeline, req.query);
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    res.json(await listEvents(knex, agent.id, { limit: q.limit, cursor: q.cursor, kind: q.kind }));
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const triggerRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/agents/{id}/triggers',
    id: 'listTriggers',
    summary: 'Schedules, webhooks, forms and chains of the agent',
    scope: 'read',
    ok: { 200: list(ref('Trigger')) },
  },
  {
    method: 'post',
    path: '/agents/{id}/triggers',
    id: 'createTrigger',
    summary: 'Add a trigger',
    scope: 'manage',
    body: jsonSchema(triggerInputSchema),
    ok: { 201: ref('Trigger') },
    errors: [422],
  },
  {
    method: 'get',
    path: '/agents/{id}/timeline',
    id: 'agentTimeline',
    summary: 'Activity timeline, newest first',
    scope: 'read',
    ok: { 200: list(ref('TimelineEvent')) },
    errors: [400],
  },
  {
    method: 'get',
    path: '/triggers/{id}',
    id: 'getTrigger',
    summary: 'A trigger',
    scope: 'read',
    ok: { 200: ref('Trigger') },
  },
  {
    method: 'put',
    path: '/triggers/{id}',
    id: 'updateTrigger',
    summary: 'Change a trigger',
    scope: 'manage',
    body: jsonSchema(triggerInputSchema),
    ok: { 200: ref('Trigger') },
    errors: [422],
  },
  {
    method: 'delete',
    path: '/triggers/{id}',
    id: 'deleteTrigger',
    summary: 'Remove a trigger (and its schedule)',
    scope: 'manage',
    ok: { 204: null },
  },
  {
    method: 'post',
    path: '/triggers/{id}/rotate-secret',
    id: 'rotateWebhookSecret',
    summary: 'A new webhook signing secret (shown once)',
    scope: 'manage',
    ok: { 200: ref('Trigger') },
    errors: [409],
  },
  {
    method: 'post',
    path: '/triggers/{id}/fire',
    id: 'fireSchedule',
    summary: 'Run a schedule now',
    scope: 'run',
    ok: { 202: obj({ fired: { type: 'boolean' }, trigger_id: { type: 'string' } }) },
    errors: [409, 503],
  },
  {
    method: 'post',
    path: '/schedules/preview',
    id: 'previewSchedule',
    summary: 'Description and next fire times of a schedule',
    scope: 'read',
    body: jsonSchema(scheduleConfigSchema),
    ok: {
      200: obj({
        description: { type: 'string' },
        policies: { type: 'string' },
        timezone: { type: 'string' },
        next_fire_times: {
          type: 'array',
          items: ts,
          description: "Temporal's own: a paused throwaway schedule with this spec, described and deleted.",
        },
      }),
    },
    errors: [422],
  },
];
