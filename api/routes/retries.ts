import { Router } from 'express';
import { jsonSchema, obj, ref, type Route } from '../openapi-schemas';
import { requirePermission } from '../auth';
import { retryRun } from '../../services/runs/retry';
import { runJson } from '../../services/runs/json';
import { jsonBody, param, parseBody } from '../validation';
import { bodies } from '../request-bodies';
import type { RouteDeps } from './agents';

/** `POST /v1/runs/:id/retry`: a new run over the run's failed items (services/runs/retry.ts). */
export function retryRoutes(deps: RouteDeps): Router {
  const r = Router();
  r.post('/runs/:id/retry', requirePermission('run'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    const body = parseBody(bodies.retryRun, req.body);
    const { run, retried, held_back } = await retryRun(deps, req.auth!.workspace, param(req, 'id'), body);
    res
      .status(202)
      .location(`/v1/runs/${run.id}`)
      .json({ ...runJson(run, deps.links), retried_items: retried, held_back });
  });
  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const retryRouteDocs: Route[] = [
  {
    method: 'post',
    path: '/runs/{id}/retry',
    id: 'retryRun',
    summary:
      'Retry failed items in a new run (linked by `retry_of`/`retried_by`); items whose call may have acted are held back',
    scope: 'run',
    body: jsonSchema(bodies.retryRun),
    ok: {
      202: {
        allOf: [
          ref('Run'),
          obj({
            retried_items: { type: 'array', items: { type: 'integer' } },
            held_back: { type: 'array', items: ref('HeldBackItem') },
          }),
        ],
      },
    },
    errors: [409, 422, 429, 503],
  },
];
