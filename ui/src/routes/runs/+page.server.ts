import { api } from '$lib/server/api';
import type { RunStatus, RunTrigger } from '$lib/api-types';
import type { PageServerLoad } from './$types';

const STATUSES: RunStatus[] = ['running', 'paused', 'needs_review', 'completed', 'failed', 'cancelled', 'skipped'];
const TRIGGERS: RunTrigger[] = [
  'manual',
  'api',
  'schedule',
  'webhook',
  'form',
  'chain',
  'agent',
  'run_link',
  'inbox',
  'test',
];

export const load: PageServerLoad = async ({ url }) => {
  const requested = url.searchParams.get('status');
  const status = STATUSES.find((s) => s === requested);
  const agentId = url.searchParams.get('agent_id') || undefined;
  const trigger = TRIGGERS.find((t) => t === url.searchParams.get('trigger'));
  const [runs, agents] = await Promise.all([
    api.listRuns({ status, agent_id: agentId, trigger, limit: 50, cursor: url.searchParams.get('cursor') }),
    // For the agent filter and to name the chosen agent.
    api.listAgents({ limit: 500 }),
  ]);
  const agent = agentId ? agents.data.find((a) => a.id === agentId) : undefined;
  return {
    runs: runs.data,
    nextCursor: runs.next_cursor,
    status: status ?? null,
    trigger: trigger ?? null,
    triggers: TRIGGERS,
    agents: agents.data.map((a) => ({ id: a.id, name: a.name })),
    agent: agent ? { id: agent.id, name: agent.name } : null,
  };
};
