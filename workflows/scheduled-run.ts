// What a Temporal Schedule starts at each fire: opens a run of the trigger's agent (or records why the fire
// was skipped: agent paused, plan allowance used up) and runs it as a child, so the schedule's overlap policy
// sees the run itself still going.
import {
  CancellationScope,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { agentRunV3 } from './agent-run';
import { currentRunType, currentRunTypePatch, runWorkflowOptions } from '../model/run-identity';

const db = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 10 },
});

export async function scheduledRun({ triggerId }: { triggerId: string }): Promise<string> {
  // The fire's workflow id is unique per fire time: a retried activity finds the run it already opened.
  const opened = await db.openScheduledRun({ triggerId, fireId: workflowInfo().workflowId });
  if ('skipped' in opened) return `skipped: ${opened.skipped}`;
  try {
    return await executeChild<typeof agentRunV3>(patched(currentRunTypePatch) ? currentRunType : 'agentRun', {
      ...runWorkflowOptions(opened),
      // Overlap policy "cancel other" cancels this workflow; the run then ends cancelled with its counts.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
  } catch (err) {
    // A cancelled run's workflow ends Canceled. One cancelled on its own (the API, the Temporal UI) ends this fire
    // as its run ended; one cancelled through this workflow ends it Canceled too.
    if (isCancellation(err) && !CancellationScope.current().consideredCancelled) return 'cancelled';
    throw err;
  }
}
