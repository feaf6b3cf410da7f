import { dailyStats } from '$lib/server/stats-api';
import type { PageServerLoad } from './$types';

const RANGES = [7, 30, 90];

export const load: PageServerLoad = async ({ url }) => {
  const asked = Number(url.searchParams.get('days'));
  const days = RANGES.includes(asked) ? asked : 30;
  return { days, ranges: RANGES, stats: await dailyStats(days) };
};
