// Run Mode: a public page per agent, when its policy allows, where anyone with the link starts runs and reviews
// their results, with no edit rights. The token opens this agent's run page and the runs started from it;
// nothing else of the workspace is visible or reachable with it.
import { Router } from 'express';
import { jsonSchema, list, obj, ref, runBody, type Route } from '../openapi-schemas';
import { getAgent, getVersion, type AgentRow } from '../../db/agents';
import { createRunLink, findRunLink, listRunLinks, revokeRunLink, type RunLink } from '../../db/run-links';
import { getFile, getRun, type RunRecord } from '../../db/runs';
import { getWorkspace } from '../../db/workspaces';
import { requirePermission } from '../auth';
import { loadAgent as loadAgentOr404 } from '../loaders';
import { ApiError } from '../problem';
import { sendDownload } from '../file-download';
import { RateLimiter } from '../rate-limit';
import { startRun, type RunServiceDeps } from '../../services/runs/start';
import { runCounts, type Links } from '../../services/runs/json';
import type { RouteDeps } from './agents';
import { jsonBody, param, parseBody } from '../validation';
import { bodies } from '../request-bodies';

export interface RunLinkDeps extends RunServiceDeps, Pick<RouteDeps, 'budgetScope'> {
  links: Links;
  bodyLimit: string;
}

const publicAccess = async (deps: RunLinkDeps, agent: AgentRow) =>
  (await getVersion(deps.knex, agent.id, agent.current_version))?.policy.public_access === true;

/** Managing an agent's Run Mode links (API key required). */
export function runLinkRoutes(deps: RunLinkDeps): Router {
  const r = Router();
  const body = jsonBody(deps.bodyLimit);
  const loadAgent = (workspaceId: string, id: string) => loadAgentOr404(deps.knex, workspaceId, id);
  const linkJson = (link: RunLink, open: boolean) => ({
    id: link.id,
    agent_id: link.agent_id,
    name: link.name,
    created_at: link.created_at,
    revoked_at: link.revoked_at,
    // Honoured only while the agent's policy allows public access.
    active: open && !link.revoked_at,
  });

  r.get('/agents/:id/run-links', requirePermission('read'), async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    const open = await publicAccess(deps, agent);
    res.json({ data: (await listRunLinks(deps.knex, agent.id)).map((l) => linkJson(l, open)), next_cursor: null });
  });

  r.post('/agents/:id/run-links', requirePermission('manage'), ...body, async (req, res) => {
    const agent = await loadAgent(req.auth!.workspace.id, param(req, 'id'));
    // A POST with no body at all names the link by default; a body, even `null`, must be the documented object.
    const { name } = parseBody(bodies.createRunLink, req.body === undefined ? {} : req.body);
    const { link, token } = await createRunLink(deps.knex, agent, name);
    const open = await publicAccess(deps, agent);
    res.status(201).json({
      ...linkJson(link, open),
      // Shown once: only its hash is kept.
      token,
      url: `${deps.links.publicUrl}/r/${token}`,
      ...(open
        ? {}
        : { warning: "the agent's policy does not allow public access: the link opens nothing until it does" }),
    });
  });

  r.delete('/run-links/:id', requirePermission('manage'), async (req, res) => {
    if (!(await revokeRunLink(deps.knex, req.auth!.workspace.id, param(req, 'id'))))
      throw new ApiError(404, 'run_link_not_found', `no active run link ${param(req, 'id')} in this workspace`);
    res.status(204).end();
  });
  return r;
}

function publicRunJson(
  run: RunRecord,
  details: { outputs: unknown[]; files: { id: string; name: string; size: number; content_type: string }[] },
) {
  return {
    id: run.id,
    status: run.status,
    created_at: run.created_at,
    ended_at: run.ended_at,
    counts: runCounts(run),
    error: run.error,
    outputs: details.outputs,
    files: details.files,
  };
}

/** What a Run Mode token opens, without an API key. */
export function publicRunRoutes(deps: RunLinkDeps): Router {
  const r = Router();
  const limiter = new RateLimiter(deps.knex, `${deps.budgetScope ?? ''}run-link`, 20, 60_000);

  const open = async (token: string) => {
    const link = await findRunLink(deps.knex, token);
    if (!link) throw new ApiError(404, 'run_link_not_found', 'this run link does not exist or was revoked');
    const agent = (await getAgent(deps.knex, link.workspace_id, link.agent_id))!;
    if (!(await publicAccess(deps, agent)))
      throw new ApiError(403, 'public_access_disabled', "this agent's owners do not allow public runs at the moment");
    return { link, agent };
  };
  const linkRun = async (link: RunLink, runId: string) => {
    const run = await getRun(deps.knex, link.workspace_id, runId);
    // Only the runs started from this link are visible through it.
    const owned = run && (await deps.knex('runs').where({ id: run.id, run_link_id: link.id }).first('id'));
    if (!run || !owned) throw new ApiError(404, 'run_not_found', `no run ${runId} was started from this link`);
    return run;
  };

  r.get('/public/run-links/:token', async (req, res) => {
    const { agent } = await open(param(req, 'token'));
    const spec = (await getVersion(deps.knex, agent.id, agent.current_version))!;
    const input = spec.nodes[0];
    res.json({
      agent_name: agent.name,
      description: agent.description,
      input_format: input.kind === 'input' ? input.format : 'auto',
      accepting: agent.state === 'live',
    });
  });

  r.post('/public/run-links/:token/runs', ...jsonBody(deps.bodyLimit), async (req, res) => {
    const { link, agent } = await open(param(req, 'token'));
    const wait = await limiter.take(`${link.id}:${req.ip}`);
    if (wait > 0)
      throw new ApiError(429, 'rate_limited', `too many runs from this client; try again in ${wait} s`, {
        'Retry-After': String(wait),
      });
    const { input } = parseBody(bodies.runAgent, req.body);
    if (agent.state !== 'live')
      throw new ApiError(
        409,
        'agent_not_live',
        `the agent is ${agent.state}; it takes runs only while live`,
        {},
        { state: agent.state },
      );
    const workspace = (await getWorkspace(deps.knex, link.workspace_id))!;
    const { run } = await startRun(deps, { workspace, agent, input, trigger: 'run_link', runLinkId: link.id });
    res.status(202).json(publicRunJson(run, { outputs: [], files: [] }));
  });

  r.get('/public/run-links/:token/runs/:runId', async (req, res) => {
    const { link } = await open(param(req, 'token'));
    const run = await linkRun(link, param(req, 'runId'));
    const [outputs, files] = await Promise.all([
      deps.knex('run_outputs').where({ run_id: run.id }).select('node_id', 'data'),
      deps.knex('files').where({ run_id: run.id }).orderBy('created_at').select('id', 'name', 'size', 'content_type'),
    ]);
    res.json(publicRunJson(run, { outputs, files }));
  });

  r.get('/public/run-links/:token/runs/:runId/files/:fileId', async (req, res) => {
    const { link } = await open(param(req, 'token'));
    const run = await linkRun(link, param(req, 'runId'));
    const file = await getFile(deps.knex, link.workspace_id, run.id, param(req, 'fileId'));
    if (!file) throw new ApiError(404, 'file_not_found', `the run has no file ${param(req, 'fileId')}`);
    sendDownload(res, file);
  });
  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const runLinkRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/agents/{id}/run-links',
    id: 'listRunLinks',
    summary: 'Run Mode links',
    scope: 'read',
    ok: { 200: list(ref('RunLink')) },
  },
  {
    method: 'post',
    path: '/agents/{id}/run-links',
    id: 'createRunLink',
    summary: 'A Run Mode link (token shown once)',
    scope: 'manage',
    body: jsonSchema(bodies.createRunLink),
    ok: { 201: ref('RunLink') },
    errors: [422],
  },
  {
    method: 'delete',
    path: '/run-links/{id}',
    id: 'revokeRunLink',
    summary: 'Revoke a Run Mode link',
    scope: 'manage',
    ok: { 204: null },
  },
  {
    method: 'get',
    path: '/public/run-links/{token}',
    id: 'openRunLink',
    summary: 'Run Mode: what the link opens',
    scope: 'public',
    ok: {
      200: obj({
        agent_name: { type: 'string' },
        description: { type: 'string' },
        input_format: { enum: ['auto', 'json', 'csv', 'tsv', 'lines', 'files'] },
        accepting: { type: 'boolean', description: 'Whether the agent is live.' },
      }),
    },
    errors: [403, 404],
  },
  {
    method: 'post',
    path: '/public/run-links/{token}/runs',
    id: 'startPublicRun',
    summary: 'Run Mode: start a run',
    scope: 'public',
    body: runBody,
    ok: { 202: ref('PublicRun') },
    errors: [400, 403, 404, 409, 413, 415, 422, 429, 503],
  },
  {
    method: 'get',
    path: '/public/run-links/{token}/runs/{runId}',
    id: 'getPublicRun',
    summary: 'Run Mode: a run started from the link',
    scope: 'public',
    ok: { 200: ref('PublicRun') },
    errors: [403, 404],
  },
  {
    method: 'get',
    path: '/public/run-links/{token}/runs/{runId}/files/{fileId}',
    id: 'downloadPublicRunFile',
    summary: 'Run Mode: a file of the run',
    scope: 'public',
    ok: { 200: 'file' },
    errors: [403, 404],
  },
];
