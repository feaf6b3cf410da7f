// The review queue: items a flag_for_review node stopped, across runs (?agent_id=&run_id=&status=), and a
// reviewer's decision on one: accept (as it is, or with an edited output), reject with a reason, or send it on
// to a named node. The decision reaches the workflow holding the item as an update, which applies it.
import { Router } from 'express';
import { jsonSchema, list, ref, type Route } from '../openapi-schemas';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { getVersion } from '../../db/agents';
import { getReview, listReviews } from '../../db/reviews';
import { reviewUpdate } from '../../workflows/contracts';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { bodies } from '../request-bodies';
import { jsonBody, param, parseBody } from '../validation';
import type { RouteDeps } from './agents';
import { parseQuery, queries } from '../query-params';

type ReviewRow = NonNullable<Awaited<ReturnType<typeof getReview>>>;

export function reviewJson(row: Omit<ReviewRow, 'workflow_id'> & { workflow_id?: string }) {
  const { workflow_id: _wf, decided_at, created_at, ...rest } = row as ReviewRow;
  return {
    ...rest,
    decided_at: decided_at ? new Date(decided_at as string).toISOString() : null,
    created_at: new Date(created_at as string).toISOString(),
  };
}

const runEnded = () =>
  new ApiError(409, 'review_closed', 'the run holding this item has ended; it can no longer be decided');

/** 409 unless the review still waits on a person: decided already, or closed with its run. */
function refuseClosed(review: { status: unknown; decided_by?: unknown }) {
  if (review.status === 'cancelled') throw runEnded();
  // Says who decided, so a reviewer who was a moment late knows what happened.
  const by = review.decided_by ? ` by ${review.decided_by}` : '';
  if (review.status !== 'pending')
    throw new ApiError(409, 'review_decided', `this item was already ${review.status}${by}`);
}

export function reviewRoutes(deps: RouteDeps): Router {
  const { knex, temporal } = deps;
  const r = Router();

  r.get('/reviews', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listReviews, req.query);
    const page = await listReviews(
      knex,
      req.auth!.workspace.id,
      { status: q.status, agentId: q.agent_id, runId: q.run_id },
      { limit: q.limit, cursor: q.cursor },
    );
    res.json({ data: page.data.map((row) => reviewJson(row as ReviewRow)), next_cursor: page.next_cursor });
  });

  r.post('/reviews/:id/decision', requirePermission('run'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    const ws = req.auth!.workspace;
    const review = await getReview(knex, ws.id, param(req, 'id'));
    if (!review) throw new ApiError(404, 'review_not_found', `no review ${param(req, 'id')} in this workspace`);
    const decision = parseBody(bodies.decideReview, req.body);
    if (decision.action === 'reject' && !decision.reason)
      throw new ApiError(422, 'reason_required', 'say why in "reason": the item fails with it');
    if (decision.action === 'send_to') {
      const spec = await getVersion(knex, review.agent_id as string, review.agent_version as number);
      if (!decision.node_id) throw new ApiError(422, 'node_required', 'name the node to send the item to in "node_id"');
      if (!spec?.nodes.some((n) => n.id === decision.node_id))
        throw new ApiError(
          422,
          'unknown_node',
          `the agent (version ${review.agent_version}) has no node "${decision.node_id}"`,
        );
    }
    refuseClosed(review);
    try {
      await temporal.workflow.getHandle(review.workflow_id).executeUpdate(reviewUpdate, {
        args: [{ reviewId: review.id as string, decision, by: req.auth!.actor }],
      });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError) && !(err instanceof WorkflowUpdateFailedError)) throw err;
      refuseClosed((await getReview(knex, ws.id, review.id as string)) ?? review);
      // Someone else decided first…
      const cause = err.cause;
      if (cause instanceof ApplicationFailure && cause.type === 'ReviewDecided')
        throw new ApiError(409, 'review_decided', cause.message);
      // …or the run has ended, or is ending.
      throw runEnded();
    }
    res.json(reviewJson((await getReview(knex, ws.id, review.id as string))!));
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const reviewRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/reviews',
    id: 'listReviews',
    summary: 'The review queue: items flagged for review, oldest first (?status=pending&agent_id=&run_id=)',
    scope: 'read',
    ok: { 200: list(ref('Review')) },
    errors: [400],
  },
  {
    method: 'post',
    path: '/reviews/{id}/decision',
    id: 'decideReview',
    summary:
      'Decide a flagged item: accept (it goes on from the flag node, or is done with `output`), reject with a `reason` (it fails), or send_to a `node_id`',
    scope: 'run',
    body: jsonSchema(bodies.decideReview),
    ok: { 200: ref('Review') },
    errors: [404, 409, 422],
  },
];
