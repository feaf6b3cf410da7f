import { Router } from 'express';
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
