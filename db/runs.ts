// Run records as the API and console read them. Everything is scoped by workspace: a run id from another
// workspace is simply not found.
import type { Knex } from 'knex';

// `skipped`: a scheduled or triggered run that found its agent paused when it began, and did nothing.
// `paused`: a person paused the run (POST /v1/runs/{id}/pause); it starts nothing until resumed.
export const runStatuses = [
  'running',
  'paused',
  'completed',
  'failed',
  'needs_review',
  'cancelled',
  'skipped',
] as const;
export type RunStatus = (typeof runStatuses)[number];
/** The statuses a run does not leave: nothing more runs, and it can be retried but not paused or cancelled. */
export const endedRunStatuses: ReadonlySet<string> = new Set<RunStatus>([
  'completed',
  'failed',
  'cancelled',
  'skipped',
]);
export const itemStatuses = ['pending', 'running', 'done', 'failed', 'needs_review', 'skipped'] as const;
export const approvalStatuses = ['pending', 'approved', 'rejected', 'timed_out', 'escalated', 'cancelled'] as const;
export const triggers = [
  'manual',
  'api',
  'test',
  'schedule',
  'webhook',
  'form',
  'chain',
  'event',
  'run_link',
  'agent',
  'inbox',
] as const;
export type Trigger = (typeof triggers)[number];

export interface RunRecord {
  id: string;
  workspace_id: string;
  agent_id: string;
  agent_name: string;
  agent_version: number;
  status: RunStatus;
  trigger: Trigger;
  /** The trigger that started the run (schedule, webhook, form, chain, event), if one did. */
  trigger_id?: string | null;
  /** A scheduled run's scheduled time: when its schedule fired for. */
  fired_at?: Date | null;
  /** The OpenTelemetry trace the run started in; null when tracing was off. */
  trace_id?: string | null;
  input: string;
  idempotency_key: string | null;
  request_hash: string | null;
  total: number;
  done: number;
  failed: number;
  needs_review: number;
  skipped: number;
  error: string | null;
  usage: Record<string, number>;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  /** The web starts this run's workflow (services/runs/dispatch.ts), and may not have yet. */
  start_pending?: boolean;
  /** Set on a run a call_agent step started: the calling run, item and node. */
  parent_run_id?: string | null;
  parent_item_seq?: number | null;
  parent_node_id?: string | null;
  /** The run whose failed items this run retries. */
  retry_of?: string | null;
  /** A test run on past items, in test mode. */
  dry_run?: boolean;
}

export const isUuid = (id: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);

function runsWithAgent(knex: Knex) {
  return knex('runs').join('agents', 'agents.id', 'runs.agent_id').select('runs.*', 'agents.name as agent_name');
}

/** The newest run of every agent of a workspace, in one query. */
export async function lastRunPerAgent(knex: Knex, workspaceId: string): Promise<Map<string, RunRecord>> {
  const rows: RunRecord[] = await runsWithAgent(knex)
    .distinctOn('runs.agent_id')
    .where('runs.workspace_id', workspaceId)
    .where('runs.dry_run', false) // a test on past items is not the agent's last run
    .orderBy([{ column: 'runs.agent_id' }, { column: 'runs.created_at', order: 'desc' }]);
  return new Map(rows.map((r) => [r.agent_id, r]));
}

/** Runs started this calendar month (UTC) per agent of a workspace, in one query. */
export async function runsThisMonthPerAgent(knex: Knex, workspaceId: string): Promise<Map<string, number>> {
  const now = new Date();
  const rows: { agent_id: string; count: number }[] = await knex('runs')
    .where({ workspace_id: workspaceId })
    .andWhere('created_at', '>=', new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)))
    .groupBy('agent_id')
    .select('agent_id')
    .count('* as count');
  return new Map(rows.map((r) => [r.agent_id, Number(r.count)]));
}

export async function getRun(knex: Knex, workspaceId: string, id: string): Promise<RunRecord | undefined> {
  if (!isUuid(id)) return undefined;
  return runsWithAgent(knex).where({ 'runs.id': id, 'runs.workspace_id': workspaceId }).first();
}

export interface RunFilter {
  agentId?: string;
  status?: RunStatus;
  trigger?: Trigger;
  from?: Date;
  to?: Date;
}

/** Newest first; the cursor is the (created_at, id) of the last row seen (see decodeTimeCursor). */
export async function listRuns(
  knex: Knex,
  workspaceId: string,
  filter: RunFilter,
  page: { limit: number; cursor?: string },
): Promise<{ data: RunRecord[]; next_cursor: string | null }> {
  const q = runsWithAgent(knex)
    .select(knex.raw('runs.created_at::text as cursor_at'))
    .where('runs.workspace_id', workspaceId);
  if (filter.agentId)
    q.where('runs.agent_id', isUuid(filter.agentId) ? filter.agentId : '00000000-0000-0000-0000-000000000000');
  if (filter.status) q.where('runs.status', filter.status);
  if (filter.trigger) q.where('runs.trigger', filter.trigger);
  if (filter.from) q.where('runs.created_at', '>=', filter.from);
  if (filter.to) q.where('runs.created_at', '<', filter.to);
  if (page.cursor) {
    q.whereRaw('(runs.created_at, runs.id) < (?::timestamptz, ?::uuid)', decodeTimeCursor(page.cursor));
  }
  const rows: (RunRecord & { cursor_at: string })[] = await q
    .orderBy([
      { column: 'runs.created_at', order: 'desc' },
      { column: 'runs.id', order: 'desc' },
    ])
    .limit(page.limit + 1);
  return timeCursorPage(rows, page.limit);
}

export class CursorError extends Error {}
const badCursor = 'cursor is not one this API returned; start again without it';
/** A timestamptz as Postgres writes it (`2026-01-01 00:00:00.0001+00`), which cursors carry. */
const timestampText = /^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(\.\d{1,6})?(Z|[+-](\d\d)(:\d\d){0,2})?$/;
/** Whether the text is such a time that Postgres takes: a real day of a year from 1, a time of day, an offset. */
function isTimestampText(text: string): boolean {
  const m = timestampText.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const realDay = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return realDay && year >= 1 && hour < 24 && minute < 60 && second < 60 && Number(m[9] ?? 0) <= 15;
}
export const encodeCursor = (...parts: (string | number)[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
export function decodeCursor(cursor: string): string[] {
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    if (Array.isArray(parts)) return parts.map(String);
  } catch {
    // fall through
  }
  throw new CursorError(badCursor);
}

/**
 * Lists ordered by (a time, id) page with the time as Postgres writes it, to the microsecond: a JavaScript date
 * keeps milliseconds, and rows made within the same one were skipped between pages. The query selects the time
 * as `cursor_at` (`col::text`) and fetches limit + 1 rows.
 */
export function decodeTimeCursor(cursor: string): [string, string] {
  const [at, id] = decodeCursor(cursor);
  if (!isTimestampText(at) || !isUuid(id)) throw new CursorError(badCursor);
  return [at, id];
}

export function timeCursorPage<T extends { cursor_at: string; id: string }>(rows: T[], limit: number) {
  const data = rows.slice(0, limit).map(({ cursor_at: _at, ...row }) => row);
  const last = rows[limit - 1];
  return { data, next_cursor: rows.length > limit ? encodeCursor(last.cursor_at, last.id) : null };
}

/**
 * Lists ordered by a sequence number or a serial id: the cursor is the last one seen, a whole number within the
 * column's range (a forged one beyond it would fail in the database, not here).
 */
export function decodeNumberCursor(cursor: string, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(decodeCursor(cursor)[0]);
  if (!Number.isSafeInteger(n) || n < 0 || n > max) throw new CursorError(badCursor);
  return n;
}

/**
 * Lists ordered by text (a name, a state key), then by id when the text alone is not unique: the cursor holds
 * the text and id of the last row seen. Text that the database cannot hold (U+0000) is no cursor of this API.
 */
export function decodeTextCursor(cursor: string, withId = true): string[] {
  const parts = decodeCursor(cursor);
  if (parts.length !== (withId ? 2 : 1) || parts[0].includes('\u0000') || (withId && !isUuid(parts[1])))
    throw new CursorError(badCursor);
  return parts;
}

/** A page of rows fetched limit + 1: the first `limit`, and a cursor of the last one's `key` if more follow. */
export function cursorPage<T>(rows: T[], limit: number, key: (row: T) => (string | number)[]) {
  const data = rows.slice(0, limit);
  return { data, next_cursor: rows.length > limit ? encodeCursor(...key(data[limit - 1])) : null };
}

export async function listItems(
  knex: Knex,
  runId: string,
  page: { limit: number; cursor?: string; status?: string; fromSeq?: number },
): Promise<{ data: Record<string, unknown>[]; next_cursor: string | null }> {
  const q = knex('run_items').where({ run_id: runId });
  if (page.status) q.where({ status: page.status });
  // A jump to any position of a long run (the console's scrolling table), where a cursor can only go forward.
  if (page.fromSeq !== undefined) q.where('seq', '>=', page.fromSeq);
  if (page.cursor) q.where('seq', '>', decodeNumberCursor(page.cursor, 2_147_483_647));
  const rows = await q
    .orderBy('seq')
    .limit(page.limit + 1)
    .select('seq', 'status', 'data', 'output', 'error', 'node_id', 'reasoning', 'usage');
  const data = rows.slice(0, page.limit);
  return { data, next_cursor: rows.length > page.limit ? encodeCursor(data[data.length - 1].seq) : null };
}

export async function listLogs(knex: Knex, runId: string, page: { limit: number; cursor?: string }) {
  const q = knex('run_logs').where({ run_id: runId });
  if (page.cursor) q.where('id', '>', decodeNumberCursor(page.cursor));
  const rows = await q
    .orderBy('id')
    .limit(page.limit + 1)
    .select('id as seq', 'at', 'level', 'node_id', 'item_seq', 'message');
  const data = rows.slice(0, page.limit);
  return { data, next_cursor: rows.length > page.limit ? encodeCursor(data[data.length - 1].seq) : null };
}

export async function runDetails(knex: Knex, runId: string) {
  const [nodeActivity, approvals, outputs, files] = await Promise.all([
    knex('node_activity')
      .where({ run_id: runId })
      .orderBy('started_at')
      .select('node_id', 'kind', 'items_in', 'items_done', 'items_failed', 'started_at', 'ended_at'),
    listApprovalsOfRun(knex, runId),
    knex('run_outputs').where({ run_id: runId }).select('node_id', 'data'),
    knex('files')
      .where({ run_id: runId })
      .orderBy('created_at')
      .select('id', 'name', 'content_type', 'size', 'created_at'),
  ]);
  return { nodeActivity, approvals, outputs, files };
}

export const approvalColumns = [
  'id',
  'run_id',
  'item_seq',
  'node_id',
  'tool',
  'message',
  'arguments',
  'status',
  'decided_arguments',
  'decided_by',
  'reason',
  'requested_at',
  'decided_at',
  'timeout_at',
  'workflow_id',
];

export function listApprovalsOfRun(knex: Knex, runId: string) {
  return knex('approvals').where({ run_id: runId }).orderBy('requested_at').select(approvalColumns);
}

/** Oldest first (the one waiting longest comes next); the cursor is the (requested_at, id) of the last row seen. */
export async function listApprovals(
  knex: Knex,
  workspaceId: string,
  filter: { status?: string; runId?: string },
  page: { limit: number; cursor?: string },
) {
  const q = knex('approvals').where({ workspace_id: workspaceId });
  if (filter.status) q.where({ status: filter.status });
  if (filter.runId) q.where({ run_id: isUuid(filter.runId) ? filter.runId : '00000000-0000-0000-0000-000000000000' });
  if (page.cursor) {
    q.whereRaw('(requested_at, id) > (?::timestamptz, ?::uuid)', decodeTimeCursor(page.cursor));
  }
  const rows = await q
    .orderBy([{ column: 'requested_at' }, { column: 'id' }])
    .limit(page.limit + 1)
    .select(...approvalColumns, knex.raw('requested_at::text as cursor_at'));
  return timeCursorPage(rows, page.limit);
}

export async function getApproval(knex: Knex, workspaceId: string, id: string) {
  if (!isUuid(id)) return undefined;
  return knex('approvals').where({ id, workspace_id: workspaceId }).first(approvalColumns);
}

export async function getFile(knex: Knex, workspaceId: string, runId: string, fileId: string) {
  if (!isUuid(fileId)) return undefined;
  return knex('files').where({ id: fileId, run_id: runId, workspace_id: workspaceId }).first();
}
