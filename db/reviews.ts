// The review queue: items a flag_for_review node stopped for a person, and what the reviewer decided.
import type { Knex } from 'knex';
import { decodeTimeCursor, isUuid, timeCursorPage } from './runs';

const columns = (knex: Knex) => [
  'v.id',
  'v.run_id',
  'r.agent_id',
  'a.name as agent_name',
  'r.agent_version',
  'v.item_seq',
  'v.node_id',
  'v.reason',
  'v.status',
  'v.decision',
  'v.decided_by',
  'v.decided_at',
  'v.created_at',
  'i.data',
  'i.output',
  knex.raw('v.created_at::text as cursor_at'),
];

const base = (knex: Knex, workspaceId: string) =>
  knex('item_reviews as v')
    .join('runs as r', 'r.id', 'v.run_id')
    .join('agents as a', 'a.id', 'r.agent_id')
    .join('run_items as i', function () {
      this.on('i.run_id', 'v.run_id').andOn('i.seq', 'v.item_seq');
    })
    .where('v.workspace_id', workspaceId);

const noId = '00000000-0000-0000-0000-000000000000';

export async function listReviews(
  knex: Knex,
  workspaceId: string,
  filter: { status?: string; agentId?: string; runId?: string },
  page: { limit: number; cursor?: string },
) {
  const q = base(knex, workspaceId);
  if (filter.status) q.where('v.status', filter.status);
  if (filter.agentId) q.where('r.agent_id', isUuid(filter.agentId) ? filter.agentId : noId);
  if (filter.runId) q.where('v.run_id', isUuid(filter.runId) ? filter.runId : noId);
  if (page.cursor) q.whereRaw('(v.created_at, v.id) > (?::timestamptz, ?::uuid)', decodeTimeCursor(page.cursor));
  const rows = await q
    .orderBy([{ column: 'v.created_at' }, { column: 'v.id' }])
    .limit(page.limit + 1)
    .select(columns(knex));
  return timeCursorPage(rows, page.limit);
}

export async function getReview(knex: Knex, workspaceId: string, id: string) {
  if (!isUuid(id)) return undefined;
  const row = await base(knex, workspaceId)
    .where('v.id', id)
    .first([...columns(knex), 'v.workflow_id']);
  if (!row) return undefined;
  const { cursor_at: _at, ...review } = row;
  return review as typeof review & { workflow_id: string };
}
