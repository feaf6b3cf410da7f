import { api } from '$lib/server/api';
import type { RunStatus } from '$lib/types';
import type { PageServerLoad } from './$types';

const STATUSES: RunStatus[] = ['running', 'needs_review', 'completed', 'failed', 'cancelled', 'skipped'];

export const load: PageServerLoad = async ({ url }) => {
  const requested = url.searchParams.get('status');
  const status = STATUSES.find((s) => s === requested);
  const agentId = url.searchParams.get('agent_id') || undefined;
  const [runs, agent] = await Promise.all([
    api.listRuns({ status, agent_id: agentId, limit: 50, cursor: url.searchParams.get('cursor') }),
    // Only to name the agent in the filter chip.
    agentId ? api.getAgent(agentId) : null,
  ]);
  return {
    runs: runs.data,
    nextCursor: runs.next_cursor,
    status: status ?? null,
    agent: agent ? { id: agent.id, name: agent.name } : null,
  };
};
