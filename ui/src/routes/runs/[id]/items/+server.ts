// Pages of a run's items for the scrolling items table, read through the API.
import { json } from '@sveltejs/kit';
import { api } from '$lib/server/api';
import type { ItemStatus } from '$lib/api-types';
import type { RequestHandler } from './$types';

const STATUSES: ItemStatus[] = ['failed', 'needs_review', 'done', 'skipped', 'pending', 'running'];

export const GET: RequestHandler = async ({ params, url }) => {
  const q = url.searchParams;
  const status = STATUSES.find((s) => s === q.get('status'));
  const page = await api.listRunItems(params.id, {
    status,
    limit: Math.min(1000, Number(q.get('limit')) || 200),
    cursor: q.get('cursor') ?? undefined,
    from_seq: q.get('from_seq') ? Number(q.get('from_seq')) : undefined,
  });
  return json(page);
};
