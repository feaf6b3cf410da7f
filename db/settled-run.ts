// A run that settled in memory (activities/run-lifecycle.ts `settleAtOnce`), written whole in one statement: its
// end on the run row, its items, node counters, log lines, outputs, files and timeline event. Every part hangs on
// the update of the run row, which claims a run still running with no items: a run that moved on meanwhile
// (cancelled, or opened by an earlier attempt) gets nothing written. Event-driven agents start many runs of one
// item, and each statement spared is spared per run (bench:runs).
import type { Knex } from 'knex';
import type { TimelineEvent } from './timeline';

export interface SettledRunWrite {
  run: { id: string; workspace_id: string; agent_id: string; agent_version: number };
  end: { status: string; error: string | null; total: number; done: number; failed: number };
  items: {
    seq: number;
    status: string;
    data: unknown;
    node_id: string | null;
    output: unknown;
    output_node: string | null;
    error: string | null;
  }[];
  activity: { node_id: string; kind: string; items_in: number; items_done: number; items_failed: number }[];
  /** In the order they happened. */
  logs: { level: string; message: string; node_id?: string; item_seq?: number }[];
  outputs: { node_id: string; data: unknown[] }[];
  files: { id: string; name: string; content_type: string; size: number; content: Buffer }[];
  event: TimelineEvent;
  /** A test run that completed: the version it tried is the agent's tested one. */
  tested: boolean;
}

/** Returns false, having written nothing, when the run was no longer a fresh running one. */
export async function writeSettledRun(knex: Knex, w: SettledRunWrite): Promise<boolean> {
  const { rows } = await knex.raw(
    `with run as (
       update runs set total = :total, done = :done, failed = :failed, needs_review = 0, skipped = 0,
         status = :status, error = :error, started_at = now(), ended_at = now()
       where id = :runId and status in ('running', 'paused') and total = 0
       returning id
     ), items as (
       insert into run_items (run_id, seq, status, data, node_id, output, output_node, error)
       select run.id, i.seq, i.status, i.data, i.node_id, i.output, i.output_node, i.error
       from run, jsonb_to_recordset(:items::jsonb)
         as i(seq int, status text, data jsonb, node_id text, output jsonb, output_node text, error text)
     ), activity as (
       insert into node_activity (run_id, node_id, kind, items_in, items_done, items_failed, ended_at)
       select run.id, a.node_id, a.kind, a.items_in, a.items_done, a.items_failed, now()
       from run, jsonb_to_recordset(:activity::jsonb)
         as a(node_id text, kind text, items_in int, items_done int, items_failed int)
     ), logs as (
       insert into run_logs (run_id, level, node_id, item_seq, message)
       select run.id, l.e->>'level', l.e->>'node_id', (l.e->>'item_seq')::int, l.e->>'message'
       from run, jsonb_array_elements(:logs::jsonb) with ordinality as l(e, ord)
       order by l.ord
     ), outputs as (
       insert into run_outputs (run_id, node_id, data)
       select run.id, o.node_id, o.data from run, jsonb_to_recordset(:outputs::jsonb) as o(node_id text, data jsonb)
     ), files as (
       insert into files (id, workspace_id, run_id, name, content_type, size, content)
       select f.id, :workspaceId::uuid, run.id, f.name, f.content_type, f.size, decode(f.content, 'base64')
       from run, jsonb_to_recordset(:files::jsonb) as f(id uuid, name text, content_type text, size int, content text)
     ), event as (
       insert into agent_events (workspace_id, agent_id, kind, message, run_id, trigger_id, details)
       select :workspaceId::uuid, :agentId::uuid, :eventKind::text, :eventMessage::text, run.id, :triggerId::uuid,
         :eventDetails::jsonb
       from run
     ), tested as (
       update agents set tested_version = :version
       where :tested and id = :agentId and current_version = :version and exists (select 1 from run)
     )
     select exists (select 1 from run) as settled`,
    {
      runId: w.run.id,
      workspaceId: w.run.workspace_id,
      agentId: w.run.agent_id,
      version: w.run.agent_version,
      ...w.end,
      items: JSON.stringify(w.items),
      activity: JSON.stringify(w.activity),
      logs: JSON.stringify(w.logs),
      outputs: JSON.stringify(w.outputs),
      files: JSON.stringify(w.files.map((f) => ({ ...f, content: f.content.toString('base64') }))),
      eventKind: w.event.kind,
      eventMessage: w.event.message,
      triggerId: w.event.trigger_id ?? null,
      eventDetails: JSON.stringify(w.event.details ?? {}),
      tested: w.tested,
    },
  );
  return rows[0].settled;
}

/**
 * A value as Postgres gives it back from a jsonb column: JSON's values only, and each object's keys shortest first,
 * then in byte order. What is computed before it is stored then reads as what is computed after.
 */
export function asStoredJsonb(value: unknown): unknown {
  return sortKeys(JSON.parse(JSON.stringify(value ?? null)));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).sort(
    (a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)),
  );
  return Object.fromEntries(keys.map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]));
}
