import { Router } from 'express';
import { jsonSchema, list, nullable, obj, ref, ts, type Route } from '../openapi-schemas';
import {
  getApproval,
  getFile,
  endedRunStatuses,
  getRun,
  itemStatuses,
  listApprovals,
  listApprovalsOfRun,
  listItems,
  listLogs,
  listRuns,
  runDetails,
  type RunRecord,
} from '../../db/runs';
import { decideApproval } from '../../services/approvals';
import { retryDetails } from '../retry-details';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { sendDownload } from '../file-download';
import { cancelRunWorkflow } from '../../services/runs/dispatch';
import { pauseRun, resumeRun } from '../../services/runs/pause';
import { runJson } from '../../services/runs/json';
import { jsonBody, param, parseBody } from '../validation';
import { bodies } from '../request-bodies';
import type { RouteDeps } from './agents';
import { parseQuery, queries } from '../query-params';

const progressPollMs = 500;

function approvalJson(a: Record<string, unknown>) {
  const { workflow_id: _internal, ...rest } = a;
  return rest;
}

export function runRoutes(deps: RouteDeps): Router {
  const { knex } = deps;
  const r = Router();

  const loadRun = async (workspaceId: string, id: string): Promise<RunRecord> => {
    const run = await getRun(knex, workspaceId, id);
    if (!run) throw new ApiError(404, 'run_not_found', `no run ${id} in this workspace`);
    return run;
  };
  r.get('/runs', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listRuns, req.query);
    // A cursor this API did not hand out is a CursorError, which the problem handler answers 400 invalid_cursor.
    const page = await listRuns(
      knex,
      req.auth!.workspace.id,
      { agentId: q.agent_id, status: q.status, trigger: q.trigger, from: q.from, to: q.to },
      { limit: q.limit, cursor: q.cursor },
    );
    res.json({ data: page.data.map((run) => runJson(run, deps.links)), next_cursor: page.next_cursor });
  });

  r.get('/runs/:id', requirePermission('read'), async (req, res) => {
    const run = await loadRun(req.auth!.workspace.id, param(req, 'id'));
    const details = await runDetails(knex, run.id);
    res.json({
      ...runJson(run, deps.links),
      ...(await retryDetails(knex, run)),
      node_activity: details.nodeActivity,
      approvals: details.approvals.map(approvalJson),
      outputs: details.outputs,
      files: details.files.map((f) => ({ ...f, url: `${deps.links.publicUrl}/v1/runs/${run.id}/files/${f.id}` })),
    });
  });

  r.get('/runs/:id/items', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listRunItems, req.query);
    const run = await loadRun(req.auth!.workspace.id, param(req, 'id'));
    res.json(
      await listItems(knex, run.id, { limit: q.limit, cursor: q.cursor, status: q.status, fromSeq: q.from_seq }),
    );
  });

  // Live progress as server-sent events: a `progress` event (the run, as GET /v1/runs/:id answers its summary)
  // whenever it changes, then `end` once it has ended. Polls the run row, which the engine keeps current.
  r.get('/runs/:id/events', requirePermission('read'), async (req, res) => {
    const workspaceId = req.auth!.workspace.id;
    let run = await loadRun(workspaceId, param(req, 'id'));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let closed = false;
    req.on('close', () => (closed = true));
    let last = '';
    let sinceWrite = 0;
    while (!closed) {
      const body = runJson(run, deps.links);
      const state = JSON.stringify({ status: body.status, counts: body.counts, error: body.error });
      if (state !== last) {
        res.write(`event: progress\ndata: ${JSON.stringify(body)}\n\n`);
        last = state;
        sinceWrite = 0;
      } else if (++sinceWrite >= 30) {
        res.write(': keep-alive\n\n'); // proxies close idle streams
        sinceWrite = 0;
      }
      if (endedRunStatuses.has(run.status)) {
        res.write(`event: end\ndata: ${JSON.stringify({ status: run.status })}\n\n`);
        break;
      }
      await new Promise((r) => setTimeout(r, progressPollMs));
      run = (await getRun(knex, workspaceId, run.id)) ?? run;
    }
    res.end();
  });

  r.get('/runs/:id/logs', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listRunLogs, req.query);
    const run = await loadRun(req.auth!.workspace.id, param(req, 'id'));
    res.json(await listLogs(knex, run.id, { limit: q.limit, cursor: q.cursor }));
  });

  r.get('/runs/:id/files/:fileId', requirePermission('read'), async (req, res) => {
    const run = await loadRun(req.auth!.workspace.id, param(req, 'id'));
    const file = await getFile(knex, req.auth!.workspace.id, run.id, param(req, 'fileId'));
    if (!file) throw new ApiError(404, 'file_not_found', `run ${run.id} has no file ${param(req, 'fileId')}`);
    sendDownload(res, file);
  });

  r.get('/runs/:id/approvals', requirePermission('read'), async (req, res) => {
    const run = await loadRun(req.auth!.workspace.id, param(req, 'id'));
    res.json({ data: (await listApprovalsOfRun(knex, run.id)).map(approvalJson), next_cursor: null });
  });

  r.post('/runs/:id/cancel', requirePermission('run'), async (req, res) => {
    const run = await loadRun(req.auth!.workspace.id, param(req, 'id'));
    if (endedRunStatuses.has(run.status))
      throw new ApiError(409, 'run_finished', `the run already ended (${run.status}); there is nothing to cancel`);
    await cancelRunWorkflow(deps, run);
    // What the cancel did, not the status from before it: the workflow winds down (closes the run's open approvals,
    // stores it cancelled with its counts) in a moment, or already has (or the run ended otherwise just before).
    const now = (await getRun(knex, req.auth!.workspace.id, run.id)) ?? run;
    res
      .status(202)
      .json({ ...runJson(now, deps.links), status: endedRunStatuses.has(now.status) ? now.status : 'cancelling' });
  });

  // Pause and resume answer the run as they left it (`paused`; `running` or `needs_review`), at once: the steps under
  // way when the pause came still finish theirs.
  r.post('/runs/:id/pause', requirePermission('run'), async (req, res) => {
    const run = await pauseRun(deps, req.auth!.workspace.id, param(req, 'id'), req.auth!.actor);
    res.status(202).json(runJson(run, deps.links));
  });

  r.post('/runs/:id/resume', requirePermission('run'), async (req, res) => {
    const run = await resumeRun(deps, req.auth!.workspace.id, param(req, 'id'), req.auth!.actor);
    res.status(202).json(runJson(run, deps.links));
  });

  r.get('/approvals', requirePermission('read'), async (req, res) => {
    const q = parseQuery(queries.listApprovals, req.query);
    const page = await listApprovals(
      knex,
      req.auth!.workspace.id,
      { status: q.status, runId: q.run_id },
      { limit: q.limit, cursor: q.cursor },
    );
    res.json({ data: page.data.map(approvalJson), next_cursor: page.next_cursor });
  });

  r.post('/approvals/:id/decision', requirePermission('run'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    const ws = req.auth!.workspace;
    // A missing approval answers 404 before a malformed body is looked at.
    if (!(await getApproval(knex, ws.id, param(req, 'id'))))
      throw new ApiError(404, 'approval_not_found', `no approval ${param(req, 'id')} in this workspace`);
    const body = parseBody(bodies.decideApproval, req.body);
    res.json(approvalJson(await decideApproval(deps, ws.id, param(req, 'id'), body, req.auth!.actor)));
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const runRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/runs',
    id: 'listRuns',
    summary: 'Runs, newest first (?agent_id=&status=&trigger=&from=&to=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Run')) },
    errors: [400],
  },
  {
    method: 'get',
    path: '/runs/{id}',
    id: 'getRun',
    summary: 'A run with node activity, approvals, outputs and files',
    scope: 'read',
    ok: {
      200: {
        allOf: [
          ref('Run'),
          obj({
            node_activity: {
              type: 'array',
              items: obj({
                node_id: { type: 'string' },
                kind: { type: 'string' },
                items_in: { type: 'integer' },
                items_done: { type: 'integer' },
                items_failed: { type: 'integer' },
                started_at: ts,
                ended_at: nullable(ts),
              }),
            },
            approvals: { type: 'array', items: ref('Approval') },
            retried_by: {
              type: 'array',
              items: { type: 'string', format: 'uuid' },
              description: 'The runs that retry this run’s failed items, newest first.',
            },
            item_sources: {
              type: 'array',
              description: 'For a retry or a test run on past items: the runs its items come from, and which.',
              items: obj({
                run_id: { type: 'string', format: 'uuid' },
                items: { type: 'array', items: { type: 'integer' } },
              }),
            },
            retry: obj({
              failed_items: { type: 'integer', description: 'Failed items no retry has taken yet.' },
              retryable_items: { type: 'array', items: { type: 'integer' } },
              held_back_items: {
                type: 'array',
                items: { type: 'integer' },
                description:
                  'Failed items a retry leaves out: a call of theirs may have acted with no answer recorded.',
              },
            }),
            outputs: { type: 'array', items: obj({ node_id: { type: 'string' }, data: {} }) },
            files: {
              type: 'array',
              items: obj({
                id: { type: 'string', format: 'uuid' },
                name: { type: 'string' },
                content_type: { type: 'string' },
                size: { type: 'integer' },
                created_at: ts,
                url: { type: 'string' },
              }),
            },
          }),
        ],
      },
    },
  },
  {
    method: 'get',
    path: '/runs/{id}/items',
    id: 'listRunItems',
    summary: 'Items with output and error (?status=&cursor=&from_seq=)',
    scope: 'read',
    ok: {
      200: list(
        obj(
          {
            seq: { type: 'integer' },
            status: { enum: [...itemStatuses] },
            data: {},
            output: {},
            error: nullable({ type: 'string' }),
            node_id: nullable({ type: 'string' }),
            reasoning: nullable({ type: 'array', description: "The model's reasoning steps, when it reasoned." }),
            usage: nullable({ type: 'object' }),
          },
          ['seq', 'status', 'data', 'output', 'error', 'node_id', 'reasoning', 'usage'],
        ),
      ),
    },
    errors: [400],
  },
  {
    method: 'get',
    path: '/runs/{id}/logs',
    id: 'listRunLogs',
    summary: 'Log lines, oldest first',
    scope: 'read',
    ok: {
      200: list(
        obj({
          seq: { type: 'integer' },
          at: ts,
          level: { type: 'string' },
          node_id: nullable({ type: 'string' }),
          item_seq: nullable({ type: 'integer' }),
          message: { type: 'string' },
        }),
      ),
    },
    errors: [400],
  },
  {
    method: 'get',
    path: '/runs/{id}/events',
    id: 'runEvents',
    summary: 'Live progress as server-sent events',
    scope: 'read',
    ok: { 200: 'events' },
  },
  {
    method: 'get',
    path: '/runs/{id}/files/{fileId}',
    id: 'downloadRunFile',
    summary: 'A file the run made',
    scope: 'read',
    ok: { 200: 'file' },
  },
  {
    method: 'get',
    path: '/runs/{id}/approvals',
    id: 'listRunApprovals',
    summary: 'Approvals of a run',
    scope: 'read',
    ok: { 200: list(ref('Approval')) },
  },
  {
    method: 'post',
    path: '/runs/{id}/cancel',
    id: 'cancelRun',
    summary: 'Cancel a run: answers what the cancel did (`cancelling`, or `cancelled` once its workflow has ended)',
    scope: 'run',
    ok: { 202: ref('CancelledRun') },
    errors: [409],
  },
  {
    method: 'post',
    path: '/runs/{id}/pause',
    id: 'pauseRun',
    summary:
      'Pause a run: steps under way finish, nothing new starts, approvals can still be decided; answers the run `paused` (a paused run answers as it is)',
    scope: 'run',
    ok: { 202: ref('Run') },
    errors: [409],
  },
  {
    method: 'post',
    path: '/runs/{id}/resume',
    id: 'resumeRun',
    summary:
      'Resume a paused run where it stopped; answers the run `running` or `needs_review` (a run not paused answers as it is)',
    scope: 'run',
    ok: { 202: ref('Run') },
    errors: [409],
  },
  {
    method: 'get',
    path: '/approvals',
    id: 'listApprovals',
    summary: 'Approvals of the workspace or of one run, oldest first (?status=&run_id=&limit=&cursor=; at most 500)',
    scope: 'read',
    ok: { 200: list(ref('Approval')) },
    errors: [400],
  },
  {
    method: 'post',
    path: '/approvals/{id}/decision',
    id: 'decideApproval',
    summary: 'Approve, reject or approve with edits',
    scope: 'run',
    body: jsonSchema(bodies.decideApproval),
    ok: { 200: ref('Approval') },
    errors: [409, 422],
  },
];
