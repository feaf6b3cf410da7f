// Each agent's activity timeline: configuration changes, lifecycle moves, trigger fires (and the fires that
// were skipped, with why), finished runs, approval decisions, and who paused or resumed a run, newest first.
import type { Knex } from 'knex';
import { decodeNumberCursor, encodeCursor } from './runs';

export const timelineKinds = [
  'agent_created',
  'agent_updated',
  'state_changed',
  'trigger_added',
  'trigger_changed',
  'trigger_removed',
  'trigger_fired',
  'trigger_skipped',
  'trigger_error',
  'chain_fired',
  'test_run',
  'run_finished',
  'approval_decided',
  'run_paused',
  'run_resumed',
] as const;
export type TimelineKind = (typeof timelineKinds)[number];

export interface TimelineEvent {
  workspace_id: string;
  agent_id: string;
  kind: TimelineKind;
  message: string;
  run_id?: string | null;
  trigger_id?: string | null;
  details?: Record<string, unknown>;
}

export async function recordEvents(knex: Knex | Knex.Transaction, events: TimelineEvent[]): Promise<void> {
  if (events.length === 0) return;
  await knex('agent_events').insert(events.map((e) => ({ ...e, details: JSON.stringify(e.details ?? {}) })));
}

export const recordEvent = (knex: Knex | Knex.Transaction, event: TimelineEvent) => recordEvents(knex, [event]);

export async function listEvents(
  knex: Knex,
  agentId: string,
  page: { limit: number; cursor?: string; kind?: TimelineKind },
): Promise<{ data: Record<string, unknown>[]; next_cursor: string | null }> {
  const q = knex('agent_events').where({ agent_id: agentId });
  if (page.kind) q.where({ kind: page.kind });
  if (page.cursor) q.where('id', '<', decodeNumberCursor(page.cursor));
  const rows = await q
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .select('id', 'at', 'kind', 'message', 'run_id', 'trigger_id', 'details');
  const data = rows.slice(0, page.limit).map((r) => ({ ...r, id: Number(r.id) }));
  return { data, next_cursor: rows.length > page.limit ? encodeCursor(data[data.length - 1].id) : null };
}
