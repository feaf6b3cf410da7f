import { Router } from 'express';
import { jsonSchema, ref, type Route } from '../openapi-schemas';
import { getRun } from '../../db/runs';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { startTestRun, testRunComparison } from '../../services/runs/test-run';
import { runJson } from '../../services/runs/json';
import { jsonBody, param, parseBody } from '../validation';
import { bodies } from '../request-bodies';
import type { RouteDeps } from './agents';

/** Tests of a version on past items (services/runs/test-run.ts): start one, read its comparison. */
export function testRunRoutes(deps: RouteDeps): Router {
  const r = Router();
  r.post('/agents/:id/test-runs', requirePermission('manage'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    const body = parseBody(bodies.startTestRun, req.body);
    const run = await startTestRun(deps, req.auth!.workspace, param(req, 'id'), body);
    res.status(202).location(`/v1/agents/${run.agent_id}/test-runs/${run.id}`).json(runJson(run, deps.links));
  });

  r.get('/agents/:id/test-runs/:runId', requirePermission('read'), async (req, res) => {
    const run = await getRun(deps.knex, req.auth!.workspace.id, param(req, 'runId'));
    if (!run || run.agent_id !== param(req, 'id') || !run.dry_run)
      throw new ApiError(404, 'test_run_not_found', `the agent has no test run ${param(req, 'runId')} on past items`);
    res.json({ run: runJson(run, deps.links), ...(await testRunComparison(deps, run)) });
  });
  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const testRunRouteDocs: Route[] = [
  {
    method: 'post',
    path: '/agents/{id}/test-runs',
    id: 'startTestRunOnPastItems',
    summary: 'Test a version on past items, in test mode (tools that act elsewhere only plan their effect)',
    scope: 'manage',
    body: jsonSchema(bodies.startTestRun),
    ok: { 202: ref('Run') },
    errors: [409, 422, 429, 503],
  },
  {
    method: 'get',
    path: '/agents/{id}/test-runs/{runId}',
    id: 'getTestRunOnPastItems',
    summary: 'A test run on past items compared item by item with the runs they came from',
    scope: 'read',
    ok: { 200: ref('TestRunComparison') },
  },
];
