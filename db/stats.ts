// Figures for the dashboard: per day (UTC) of a workspace, runs by status, items processed, durations and cost.
import type { Knex } from 'knex';

export interface DayStats {
  date: string;
  runs: number;
  by_status: Record<string, number>;
  items: number;
  failed_items: number;
  avg_duration_ms: number | null;
  cost_usd: number;
}

export async function dailyStats(knex: Knex, workspaceId: string, days: number, agentId?: string): Promise<DayStats[]> {
  const since = new Date(Date.now() - (days - 1) * 86_400_000);
  since.setUTCHours(0, 0, 0, 0);
  const q = knex('runs')
    .where('workspace_id', workspaceId)
    .andWhere('created_at', '>=', since)
    // A test run on past items is no run of the agent's work: the dashboard leaves it out.
    .andWhere('dry_run', false)
    .groupByRaw(`1, 2`)
    .select(
      knex.raw(`to_char(date_trunc('day', created_at at time zone 'UTC'), 'YYYY-MM-DD') as date`),
      'status',
      knex.raw('count(*)::int as runs'),
      knex.raw('coalesce(sum(done + failed + needs_review), 0)::int as items'),
      knex.raw('coalesce(sum(failed), 0)::int as failed_items'),
      knex.raw(`avg(extract(epoch from (ended_at - coalesce(started_at, created_at))) * 1000)::float as avg_ms`),
      knex.raw(`coalesce(sum((usage->>'cost_usd')::numeric), 0)::float as cost_usd`),
    );
  if (agentId) q.andWhere('agent_id', agentId);
  const rows: {
    date: string;
    status: string;
    runs: number;
    items: number;
    failed_items: number;
    avg_ms: number | null;
    cost_usd: number;
  }[] = await q;

  const byDate = new Map<string, DayStats & { durationWeight: number; durationSum: number }>();
  for (let i = 0; i < days; i++) {
    const date = new Date(since.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    byDate.set(date, {
      date,
      runs: 0,
      by_status: {},
      items: 0,
      failed_items: 0,
      avg_duration_ms: null,
      cost_usd: 0,
      durationWeight: 0,
      durationSum: 0,
    });
  }
  for (const r of rows) {
    const d = byDate.get(r.date);
    if (!d) continue;
    d.runs += r.runs;
    d.by_status[r.status] = r.runs;
    d.items += r.items;
    d.failed_items += r.failed_items;
    d.cost_usd += r.cost_usd;
    if (r.avg_ms !== null) {
      d.durationSum += r.avg_ms * r.runs;
      d.durationWeight += r.runs;
    }
  }
  return [...byDate.values()].map(({ durationWeight, durationSum, ...d }) => ({
    ...d,
    avg_duration_ms: durationWeight ? Math.round(durationSum / durationWeight) : null,
    cost_usd: Math.round(d.cost_usd * 1e6) / 1e6,
  }));
}
