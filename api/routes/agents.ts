import { Router, type Request, type RequestHandler } from 'express';
import { anyObject, jsonSchema, list, nullable, obj, ref, runBody, ts, type Route } from '../openapi-schemas';
import {
  AgentGoneError,
  deleteAgent,
  getAgentHint,
  getVersion,
  listAgents,
  listVersions,
  setAgentState,
  StaleVersionError,
  TransitionError,
  updateAgent,
  type AgentRow,
  type SaveOptions,
} from '../../db/agents';
import { lastRunPerAgent, runsThisMonthPerAgent } from '../../db/runs';
import { recordEvent } from '../../db/timeline';
import { dailyStats } from '../../db/stats';
import { listTriggers } from '../../db/triggers';
import { deleteSchedule, isScheduled, setSchedulesPaused } from '../../schedules/sync';
import { resumePositions } from '../../schedules/event-marks';
import { deleteState, getState, listState, putState, StateConflictError } from '../../db/state-store';
import { planStatus, runsThisMonth, type Workspace } from '../../db/workspaces';
import { planLimits } from '../../model/plan';
import { agentSpecSchema, type AgentSpec } from '../../model/agent';
import { jsonDiff } from '../json-diff';
import { createAgentWithinPlan } from '../agent-creation';
import { bodies } from '../request-bodies';
import { agentNotFound, loadAgent as loadAgentOr404 } from '../loaders';
import { checkAgentCalls, validateAgentSpec } from '../agent-validation';
import { sourceWarnings } from '../source-warnings';
import { skillWarnings } from '../skill-warnings';
import { agentNameWarnings } from '../agent-name-warnings';
import { requirePermission, verifyKeyAgain } from '../auth';
import { ApiError } from '../problem';
import { startRun, type RunServiceDeps, type StartRunRequest } from '../../services/runs/start';
import { checkTestedOnPastItems } from '../../services/runs/test-run';
import { agentJson } from '../serialize';
import { runJson, type Links } from '../../services/runs/json';
import { jsonBody, param, parseBody } from '../validation';
import { parseQuery, queries } from '../query-params';

export interface RouteDeps extends RunServiceDeps {
  links: Links;
  bodyLimit: string;
  /**
   * Prefixes the keys of the request budgets (api/rate-limit.ts). A deployment leaves it unset, so all its web
   * processes share their budgets; tests give each app of theirs its own, as each is a separate deployment.
   */
  budgetScope?: string;
}

/** An Idempotency-Key names a request, it does not carry data: longer ones are refused before they are stored. */
const maxIdempotencyKeyLength = 255;

/** Who made a change, for the timeline: a person's email or an API key's name. */
const byCaller = (req: Request) => `by ${req.auth!.actor}`;

export function agentRoutes(deps: RouteDeps): Router {
  const { knex } = deps;
  const r = Router();
  const body = jsonBody(deps.bodyLimit);

  const loadAgent = (workspaceId: string, id: string) => loadAgentOr404(knex, workspaceId, id);

  r.get('/agents', requirePermission('read'), async (req, res) => {
    const ws = req.auth!.workspace;
    const q = parseQuery(queries.listAgents, req.query);
    const [agents, lastRuns, monthCounts] = await Promise.all([
      listAgents(knex, ws.id, q),
      lastRunPerAgent(knex, ws.id),
      runsThisMonthPerAgent(knex, ws.id),
    ]);
    const data = agents.data.map((a) => {
      const last = lastRuns.get(a.id);
      return agentJson(a, {
        last_run: last ? runJson(last, deps.links) : null,
        runs_this_month: monthCounts.get(a.id) ?? 0,
      });
    });
    res.json({ data, next_cursor: agents.next_cursor });
  });

  const createWithinPlan = (ws: Workspace, spec: AgentSpec, actor: string, how?: string) =>
    createAgentWithinPlan(knex, ws, spec, actor, how);
  const createFromBody: RequestHandler = async (req, res) => {
    const ws = req.auth!.workspace;
    const spec = validateAgentSpec(req.body);
    await checkAgentCalls(knex, ws.id, spec);
    const sameName = await agentNameWarnings(knex, ws.id, spec.name);
    const agent = await createWithinPlan(ws, spec, req.auth!.actor);
    const warnings = [
      ...sameName,
      ...(await sourceWarnings(knex, ws.id, spec)),
      ...(await skillWarnings(knex, ws.id, spec)),
    ];
    res.status(201).location(`/v1/agents/${agent.id}`).json(agentJson(agent, { spec, warnings }));
  };
  r.post('/agents', requirePermission('manage'), ...body, createFromBody);
  // Takes what GET /v1/agents/:id/export gives (the spec as JSON), so agents move between workspaces.
  r.post('/agents/import', requirePermission('manage'), ...body, createFromBody);

  // The suggested rollback copy before major changes (spec §9.3): a new Draft agent with the current spec.
  r.post('/agents/:id/duplicate', requirePermission('manage'), async (req, res) => {
    const ws = req.auth!.workspace;
    const source = await loadAgent(ws.id, param(req, 'id'));
    const original = await getVersion(knex, source.id, source.current_version);
    if (!original) throw agentNotFound(source.id); // deleted since it was read
    const spec = { ...original, name: `${original.name} (copy)` };
    const agent = await createWithinPlan(ws, spec, req.auth!.actor, `, duplicated from ${source.name}`);
    res.status(201).location(`/v1/agents/${agent.id}`).json(agentJson(agent, { spec }));
  });

  /** A version number as sent in the path: a whole number that fits the column, else none. */
  const versionNumber = (value: unknown): number | undefined =>
    typeof value === 'string' && /^[1-9]\d{0,8}$/.test(value) ? Number(value) : undefined;

  r.get('/agents/:id/diff', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.diffVersions, req.query);
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const version = async (name: 'from' | 'to') => {
      const n = q[name];
      const spec = await getVersion(knex, agent.id, n);
      if (!spec)
        throw new ApiError(
          404,
          'version_not_found',
          `${name}: the agent has no version ${n} (its versions are 1 to ${agent.current_version})`,
        );
      return spec;
    };
    res.json({
      from: q.from,
      to: q.to,
      changes: jsonDiff(await version('from'), await version('to')),
    });
  });

  r.get('/agents/:id', requirePermission('read'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    res.json(agentJson(agent, { spec: await getVersion(knex, agent.id, agent.current_version) }));
  });

  /**
   * Saves a version of the agent as the caller (PUT, restore): a stale `baseVersion` is 409 version_conflict, and an
   * agent deleted since it was read is 404 as any save to a missing agent.
   */
  const saveVersion = (req: Request, agent: AgentRow, spec: AgentSpec, options: Omit<SaveOptions, 'savedBy'>) =>
    updateAgent(knex, agent, spec, { ...options, savedBy: req.auth!.actor }).catch((err) => {
      if (err instanceof AgentGoneError) throw agentNotFound(agent.id);
      if (!(err instanceof StaleVersionError)) throw err;
      // Two people editing one agent: the later save is not taken over the earlier one unseen.
      const by = err.savedBy ? ` by ${err.savedBy}` : '';
      const detail =
        err.base > err.current
          ? `the agent has no version ${err.base}: its newest is version ${err.current}${by}; reload to see it, then make your change again`
          : `version ${err.current} was saved${by} after you opened version ${err.base}: reload to see it, then make your change again`;
      throw new ApiError(
        409,
        'version_conflict',
        detail,
        {},
        { base_version: err.base, current_version: err.current, saved_by: err.savedBy, saved_at: err.savedAt },
      );
    });

  r.put('/agents/:id', requirePermission('manage'), ...body, async (req, res) => {
    const ws = req.auth!.workspace;
    const agent = await loadAgent(ws.id, param(req, 'id'));
    const { base_version: baseVersion } = parseQuery(queries.updateAgent, req.query);
    const spec = validateAgentSpec(req.body);
    await checkAgentCalls(knex, ws.id, spec, agent.id);
    const updated = await saveVersion(req, agent, spec, {
      baseVersion,
      event: (saved) => ({
        message: `configuration changed: version ${saved.current_version} saved ${byCaller(req)}`,
        details: { version: saved.current_version, previous_version: saved.current_version - 1 },
      }),
    });
    const warnings = [
      ...(await agentNameWarnings(knex, ws.id, spec.name, agent.id)),
      ...(await sourceWarnings(knex, ws.id, spec)),
      ...(await skillWarnings(knex, ws.id, spec)),
    ];
    res.json(agentJson(updated, { spec, warnings }));
  });

  r.delete('/agents/:id', requirePermission('manage'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    for (const t of await listTriggers(knex, agent.id)) if (isScheduled(t)) await deleteSchedule(deps, t);
    await deleteAgent(knex, req.auth!.workspace.id, param(req, 'id'));
    res.status(204).end();
  });

  r.get('/agents/:id/versions', requirePermission('read'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    res.json({ data: await listVersions(knex, agent.id), next_cursor: null });
  });

  r.get('/agents/:id/versions/:version', requirePermission('read'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const n = versionNumber(param(req, 'version'));
    const spec = n !== undefined ? await getVersion(knex, agent.id, n) : undefined;
    if (!spec)
      throw new ApiError(404, 'version_not_found', `agent ${agent.id} has no version ${param(req, 'version')}`);
    res.json({ version: Number(param(req, 'version')), spec });
  });

  // Restoring writes the old spec as a new version: history only grows, and running runs keep theirs. With
  // ?base_version= (the version the person was looking at), it is refused as a stale PUT is.
  r.post('/agents/:id/versions/:version/restore', requirePermission('manage'), async (req, res) => {
    const ws = req.auth!.workspace;
    const agent = await loadAgent(ws.id, param(req, 'id'));
    const { base_version: baseVersion } = parseQuery(queries.restoreVersion, req.query);
    const version = versionNumber(param(req, 'version'));
    const spec = version !== undefined ? await getVersion(knex, agent.id, version) : undefined;
    if (!spec)
      throw new ApiError(404, 'version_not_found', `agent ${agent.id} has no version ${param(req, 'version')}`);
    const updated = await saveVersion(req, agent, spec, {
      baseVersion,
      event: (saved) => ({
        message: `version ${version} restored as version ${saved.current_version} ${byCaller(req)}`,
        details: {
          version: saved.current_version,
          restored_from: version,
          previous_version: saved.current_version - 1,
        },
      }),
    });
    res.json(agentJson(updated, { spec }));
  });

  r.get('/agents/:id/export', requirePermission('read'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const spec = await getVersion(knex, agent.id, agent.current_version);
    res.attachment(`${agent.name.replace(/[^\w.-]+/g, '-')}.json`).json(spec);
  });

  r.post('/agents/:id/state', requirePermission('manage'), ...body, async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const { state } = parseBody(bodies.setAgentState, req.body);
    if (state === 'live' && agent.state !== 'live') await checkTestedOnPastItems(deps, agent);
    let moved: AgentRow;
    try {
      // Resumed: the event triggers that skip what was missed start from their connections' positions now.
      const positions =
        agent.state === 'paused' && state === 'live'
          ? await resumePositions(deps, await listTriggers(knex, agent.id))
          : undefined;
      moved = await setAgentState(knex, agent, state, positions);
    } catch (err) {
      if (err instanceof TransitionError)
        throw new ApiError(409, 'invalid_transition', err.message, {}, { state: err.from });
      throw err;
    }
    // Pausing pauses every schedule of the agent in Temporal; going live again resumes them. A run already on
    // its way when the agent was paused checks the state when it begins and is skipped.
    await setSchedulesPaused(deps, await listTriggers(knex, agent.id), moved.state);
    await recordEvent(knex, {
      workspace_id: agent.workspace_id,
      agent_id: agent.id,
      kind: 'state_changed',
      message: `${agent.state} → ${moved.state} ${byCaller(req)}`,
      details: { from: agent.state, to: moved.state },
    });
    res.json(agentJson(moved));
  });

  /** Starts a run of a Live agent: the API's run call, or a person pressing Run in the console. */
  const startLiveRun =
    (trigger: 'api' | 'manual'): RequestHandler =>
    async (req, res) => {
      // The key may be one verified a moment ago (api/auth.ts): the statement that opens the run checks it again,
      // and a refusal before that verifies it afresh, so a key revoked meanwhile hears that it was.
      const key = req.auth!.key;
      try {
        const apiKey = key && { id: key.id, verifyAgain: () => verifyKeyAgain(knex, req) };
        const { run, created } = await startFromRequest(req, trigger, apiKey);
        if (!created) res.setHeader('Idempotent-Replayed', 'true');
        res.status(202).location(`/v1/runs/${run.id}`).json(runJson(run, deps.links));
      } catch (err) {
        if (key) await verifyKeyAgain(knex, req);
        throw err;
      }
    };
  const startFromRequest = async (req: Request, trigger: 'api' | 'manual', apiKey: StartRunRequest['apiKey']) => {
    const idempotencyKey = req.get('idempotency-key') || undefined;
    if (idempotencyKey && idempotencyKey.length > maxIdempotencyKeyLength)
      throw new ApiError(
        422,
        'invalid_idempotency_key',
        `the Idempotency-Key header must be at most ${maxIdempotencyKeyLength} characters (a UUID is 36)`,
      );
    const ws = req.auth!.workspace;
    // The agent as read a moment ago, if it was: the statement that opens the run checks it again.
    const agent = await getAgentHint(knex, ws.id, param(req, 'id'));
    if (!agent) throw new ApiError(404, 'agent_not_found', `no agent ${param(req, 'id')} in this workspace`);
    const { input } = parseBody(bodies.runAgent, req.body);
    return startRun(deps, { workspace: ws, agent, input, trigger, idempotencyKey, apiKey });
  };

  // The one documented endpoint (spec §4).
  r.post('/agents/:id/run', requirePermission('run'), ...body, startLiveRun('api'));
  // The same start, recorded as a manual one (the console's Run button).
  r.post('/agents/:id/manual-run', requirePermission('run'), ...body, startLiveRun('manual'));

  // A run for testing, allowed in any state; a successful one lets the version be marked ready.
  r.post('/agents/:id/test-run', requirePermission('manage'), ...body, async (req, res) => {
    const ws = req.auth!.workspace;
    const agent = await loadAgent(ws.id, param(req, 'id'));
    const { input } = parseBody(bodies.runAgent, req.body);
    const { run } = await startRun(deps, { workspace: ws, agent, input, trigger: 'test' });
    res.status(202).location(`/v1/runs/${run.id}`).json(runJson(run, deps.links));
  });

  r.get('/agents/:id/state-store', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listState, req.query);
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    res.json(await listState(knex, agent.id, q));
  });
  r.get('/agents/:id/state-store/:key', requirePermission('read'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const entry = await getState(knex, agent.id, param(req, 'key'));
    if (!entry)
      throw new ApiError(404, 'state_key_not_found', `the agent's state store has no key "${param(req, 'key')}"`);
    res.json(entry);
  });
  r.put('/agents/:id/state-store/:key', requirePermission('manage'), ...body, async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const { value, expected_version } = parseBody(bodies.putState, req.body);
    try {
      res.json(await putState(knex, agent.id, param(req, 'key'), value ?? null, expected_version));
    } catch (err) {
      if (err instanceof StateConflictError) throw new ApiError(409, 'state_conflict', err.message);
      throw err;
    }
  });
  r.delete('/agents/:id/state-store/:key', requirePermission('manage'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    if (!(await deleteState(knex, agent.id, param(req, 'key'))))
      throw new ApiError(404, 'state_key_not_found', `the agent's state store has no key "${param(req, 'key')}"`);
    res.status(204).end();
  });

  // The dashboard's figures: per day, runs by status, items, average duration and cost.
  r.get('/stats/daily', requirePermission('read'), async (req, res) => {
    const { days, agent_id: agentId } = parseQuery(queries.dailyStats, req.query);
    if (agentId) await loadAgent(req.auth!.workspace.id, agentId);
    res.json({ days, data: await dailyStats(knex, req.auth!.workspace.id, days, agentId) });
  });

  r.get('/usage', requirePermission('read'), async (req, res) => {
    const ws = req.auth!.workspace;
    const status = await planStatus(knex, ws.id);
    res.json({
      plan: ws.plan,
      runs_this_month: await runsThisMonth(knex, ws.id),
      runs_per_month: planLimits[ws.plan].runsPerMonth,
      pending_plan: status.pending_plan,
      plan_changes_at: status.plan_changes_at,
    });
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const agentRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/agents',
    id: 'listAgents',
    summary: 'Agents of the workspace',
    scope: 'read',
    ok: { 200: list(ref('Agent')) },
  },
  {
    method: 'post',
    path: '/agents',
    id: 'createAgent',
    summary: 'Create an agent (Draft, version 1)',
    scope: 'manage',
    body: jsonSchema(agentSpecSchema),
    ok: { 201: ref('Agent') },
    errors: [403, 422],
  },
  {
    method: 'post',
    path: '/agents/import',
    id: 'importAgent',
    summary: 'Import an exported agent as a Draft',
    scope: 'manage',
    body: jsonSchema(agentSpecSchema),
    ok: { 201: ref('Agent') },
    errors: [403, 422],
  },
  {
    method: 'get',
    path: '/agents/{id}',
    id: 'getAgent',
    summary: 'An agent with the spec of its current version',
    scope: 'read',
    ok: { 200: ref('Agent') },
  },
  {
    method: 'put',
    path: '/agents/{id}',
    id: 'updateAgent',
    summary:
      'Save a new version; with ?base_version= (the version the edit started from), 409 version_conflict if another was saved since',
    scope: 'manage',
    body: jsonSchema(agentSpecSchema),
    ok: { 200: ref('Agent') },
    errors: [404, 409, 422],
  },
  {
    method: 'delete',
    path: '/agents/{id}',
    id: 'deleteAgent',
    summary: 'Delete an agent and its schedules',
    scope: 'manage',
    ok: { 204: null },
  },
  {
    method: 'post',
    path: '/agents/{id}/duplicate',
    id: 'duplicateAgent',
    summary: 'A Draft copy',
    scope: 'manage',
    ok: { 201: ref('Agent') },
    errors: [403],
  },
  {
    method: 'get',
    path: '/agents/{id}/diff',
    id: 'diffVersions',
    summary: 'Changes between two versions (?from=&to=)',
    scope: 'read',
    ok: {
      200: obj({
        from: { type: 'integer' },
        to: { type: 'integer' },
        changes: {
          type: 'array',
          description: 'Each changed path, with its value before and after (absent on the side without it).',
          items: obj({ path: { type: 'string' }, from: {}, to: {} }, ['path']),
        },
      }),
    },
    errors: [400],
  },
  {
    method: 'get',
    path: '/agents/{id}/versions',
    id: 'listVersions',
    summary: 'Saved versions, newest first',
    scope: 'read',
    ok: {
      200: list(
        obj({
          version: { type: 'integer' },
          created_at: ts,
          saved_by: nullable({
            type: 'string',
            description:
              "Who saved it: a person's email or an API key's name; null for agents made by the command line or the shipped examples, and for saves before authors were kept",
          }),
        }),
      ),
    },
  },
  {
    method: 'get',
    path: '/agents/{id}/versions/{version}',
    id: 'getVersion',
    summary: 'One saved version',
    scope: 'read',
    ok: { 200: obj({ version: { type: 'integer' }, spec: anyObject }) },
  },
  {
    method: 'post',
    path: '/agents/{id}/versions/{version}/restore',
    id: 'restoreVersion',
    summary:
      'Save an old version again as the newest; with ?base_version= (the version shown), 409 version_conflict if another was saved since',
    scope: 'manage',
    ok: { 200: ref('Agent') },
    errors: [404, 409],
  },
  {
    method: 'get',
    path: '/agents/{id}/export',
    id: 'exportAgent',
    summary: 'The spec as a JSON file',
    scope: 'read',
    ok: { 200: anyObject },
  },
  {
    method: 'post',
    path: '/agents/{id}/state',
    id: 'setAgentState',
    summary: 'Move through the lifecycle',
    scope: 'manage',
    body: jsonSchema(bodies.setAgentState),
    ok: { 200: ref('Agent') },
    errors: [409, 422],
  },
  {
    method: 'post',
    path: '/agents/{id}/run',
    id: 'runAgent',
    summary: 'Start a run of a Live agent (spec §4); Idempotency-Key supported',
    scope: 'run',
    body: runBody,
    ok: { 202: ref('Run') },
    errors: [409, 422, 429, 503],
  },
  {
    method: 'post',
    path: '/agents/{id}/manual-run',
    id: 'runAgentManually',
    summary: 'The same start, recorded as manual',
    scope: 'run',
    body: runBody,
    ok: { 202: ref('Run') },
    errors: [409, 422, 429, 503],
  },
  {
    method: 'post',
    path: '/agents/{id}/test-run',
    id: 'testRunAgent',
    summary: 'A test run, in any state',
    scope: 'manage',
    body: runBody,
    ok: { 202: ref('Run') },
    errors: [422, 429, 503],
  },
  {
    method: 'get',
    path: '/agents/{id}/state-store',
    id: 'listState',
    summary: "The agent's durable key/value entries by key (?limit=&cursor=)",
    scope: 'read',
    ok: { 200: list(ref('StateEntry')) },
  },
  {
    method: 'get',
    path: '/agents/{id}/state-store/{key}',
    id: 'getState',
    summary: 'One entry',
    scope: 'read',
    ok: { 200: ref('StateEntry') },
  },
  {
    method: 'put',
    path: '/agents/{id}/state-store/{key}',
    id: 'putState',
    summary: 'Set an entry (expected_version for optimistic concurrency)',
    scope: 'manage',
    body: jsonSchema(bodies.putState),
    ok: { 200: ref('StateEntry') },
    errors: [409, 422],
  },
  {
    method: 'delete',
    path: '/agents/{id}/state-store/{key}',
    id: 'deleteState',
    summary: 'Remove an entry',
    scope: 'manage',
    ok: { 204: null },
  },
  {
    method: 'get',
    path: '/usage',
    id: 'getUsage',
    summary: 'Plan and runs this month',
    scope: 'read',
    ok: {
      200: obj({
        plan: { type: 'string' },
        runs_this_month: { type: 'integer' },
        runs_per_month: nullable({ type: 'integer' }),
        pending_plan: nullable({ type: 'string' }),
        plan_changes_at: nullable(ts),
      }),
    },
  },
  {
    method: 'get',
    path: '/stats/daily',
    id: 'dailyStats',
    summary: 'Per day: runs by status, items, durations, cost (?days=&agent_id=)',
    scope: 'read',
    ok: { 200: obj({ days: { type: 'integer' }, data: { type: 'array', items: ref('DayStats') } }) },
    errors: [400],
  },
];
