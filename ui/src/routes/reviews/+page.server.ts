import { decideReview } from '$lib/server/actions';
import { api } from '$lib/server/api';
import type { Actions, PageServerLoad } from './$types';

// The review queue: flagged items of every run (or of one agent or run, from the filter in the address).
export const load: PageServerLoad = async ({ url }) => {
  const agentId = url.searchParams.get('agent_id') || undefined;
  const runId = url.searchParams.get('run_id') || undefined;
  const reviews = await api.listReviews({ status: 'pending', agent_id: agentId, run_id: runId });
  return { reviews: reviews.data, more: reviews.next_cursor !== null, agentId, runId };
};

export const actions: Actions = { decide: decideReview };
