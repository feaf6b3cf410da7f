// A micro-batching trigger's window (db/deliveries.ts): opened by its first delivery, closed when the window
// passes or the batch is full, then its deliveries become one run, started as an abandoned child so the run
// outlives this short workflow.
import { condition, ParentClosePolicy, patched, proxyActivities, setHandler, startChild } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { agentRunV3 } from './agent-run';
import { batchFullSignal } from './contracts';
import { currentRunType, currentRunTypePatch, runWorkflowOptions } from '../model/run-identity';

const db = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 10 },
});

export async function deliveryBatch({ batchId, windowMs }: { batchId: string; windowMs: number }): Promise<string> {
  let full = false;
  setHandler(batchFullSignal, () => void (full = true));
  await condition(() => full, windowMs);
  const opened = await db.openBatchRun({ batchId });
  if ('skipped' in opened) return `skipped: ${opened.skipped}`;
  const type = patched(currentRunTypePatch) ? currentRunType : 'agentRun';
  await startChild<typeof agentRunV3>(type, {
    ...runWorkflowOptions(opened),
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
  return opened.id;
}
