// The dashboard's figures, through the API (DESIGN.md convention 10).
import { apiFetch } from './api';

export interface DayStats {
  date: string;
  runs: number;
  by_status: Record<string, number>;
  items: number;
  failed_items: number;
  avg_duration_ms: number | null;
  cost_usd: number;
}

export async function dailyStats(days: number): Promise<DayStats[]> {
  const res = await apiFetch(`/v1/stats/daily?days=${days}`);
  return ((await res.json()) as { data: DayStats[] }).data;
}
