// A downgrade takes effect at the end of the billing period (spec §8): a durable timer until then. An upgrade, or
// another change, cancels it.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { Plan } from '../model/plan';

const { applyPlanChange } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 20 },
});

export async function planChange({ workspaceId, plan, at }: { workspaceId: string; plan: Plan; at: number }) {
  await sleep(Math.max(0, at - Date.now())); // Date.now() is the workflow's own replay-safe clock
  return applyPlanChange({ workspaceId, plan });
}
