// The dashboard's figures, through the API (DESIGN.md convention 10).
import { body, client } from './api';

/** Per day, oldest first: runs by status, items, average duration and cost. */
export const dailyStats = async (days: number) =>
  (await body(client.GET('/stats/daily', { params: { query: { days } } }))).data;
