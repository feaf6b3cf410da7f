import { decideApproval } from '$lib/server/actions';
import { api } from '$lib/server/api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async () => {
  const [approvals, waitingRuns] = await Promise.all([
    api.listOpenApprovals(),
    // An approval names only its run; the runs waiting on people give the agent names in one call.
    api.listRuns({ status: 'needs_review', limit: 100 }),
  ]);
  const runs = new Map(waitingRuns.data.map((run) => [run.id, run]));
  return {
    approvals: approvals.data.map((approval) => {
      const run = runs.get(approval.run_id);
      return { approval, agentName: run?.agent_name ?? null };
    }),
    more: approvals.more,
  };
};

export const actions: Actions = { decide: decideApproval };
