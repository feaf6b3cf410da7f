// An item's source context (what its retrievals found, what its answer cited), for the run page's item panel.
import { error, json } from '@sveltejs/kit';
import { sourcesApi } from '$lib/server/sources-api';
import type { RequestHandler } from './$types';

export const GET: RequestHandler = async ({ params, url }) => {
  const item = url.searchParams.get('item') ?? '';
  if (!/^\d+$/.test(item)) error(400, 'item must be the sequence number of an item of the run');
  return json(await sourcesApi.sourceContext(params.id, Number(item)));
};
