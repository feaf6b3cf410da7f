import { decideReview } from '$lib/server/actions';
import { api } from '$lib/server/api';
import type { Actions, PageServerLoad } from './$types';

// The review queue: flagged items of every run (or of one agent or run, from the filter in the address), oldest
// first, with each agent's nodes so "send to" is chosen from a list rather than typed.
export const load: PageServerLoad = async ({ url }) => {
  const agentId = url.searchParams.get('agent_id') || undefined;
  const runId = url.searchParams.get('run_id') || undefined;
  const reviews = await api.listReviews({ status: 'pending', agent_id: agentId, run_id: runId });
  // Oldest first, run by run (the API's order); within a run in item order, since a run's items reach their flag
  // at nearly the same moment, in no order a person would follow.
  const runOrder = new Map<string, number>();
  for (const r of reviews.data) if (!runOrder.has(r.run_id)) runOrder.set(r.run_id, runOrder.size);
  const queue = [...reviews.data].sort(
    (a, b) => runOrder.get(a.run_id)! - runOrder.get(b.run_id)! || a.item_seq - b.item_seq,
  );
  const agentIds = [...new Set(queue.map((r) => r.agent_id))];
  const agents = await Promise.all(agentIds.map((id) => api.getAgent(id)));
  const nodes = Object.fromEntries(
    agents.map((a) => [a.id, (a.spec?.nodes ?? []).map((n) => ({ id: n.id, kind: n.kind }))]),
  );
  return { reviews: queue, more: reviews.next_cursor !== null, agentId, runId, nodes };
};

export const actions: Actions = { decide: decideReview };
