// An account's recovery period as a durable timer: it survives restarts of every process. Recovering the
// account cancels this workflow; otherwise, when the period ends, the account is erased for good.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';

const { eraseDeletedAccount } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 20 },
});

export async function accountErasure({ userId, afterSeconds }: { userId: string; afterSeconds: number }) {
  await sleep(afterSeconds * 1000);
  return eraseDeletedAccount({ userId });
}
