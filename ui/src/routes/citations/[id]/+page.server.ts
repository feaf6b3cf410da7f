import { sourcesApi } from '$lib/server/sources-api';
import type { PageServerLoad } from './$types';

// ?run=<id>&item=<seq> say where the reader came from, for the way back to the run's details.
export const load: PageServerLoad = async ({ params, url }) => {
  const citation = await sourcesApi.citation(params.id);
  const run = url.searchParams.get('run');
  const item = url.searchParams.get('item');
  return { citation, from: run ? { run, item: item && /^\d+$/.test(item) ? Number(item) : null } : null };
};
