// An event trigger's poller, started by its Temporal Schedule every poll interval (schedules/sync.ts; paused while
// the agent is not live): one poll, then the runs it opened start as abandoned children, so they outlive this short
// workflow and the next poll does not wait for them. A run's workflow id is its run's, and a start of one already
// started (or finished) is refused, so a run is never started twice.
import { ParentClosePolicy, patched, proxyActivities, startChild, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Activities } from '../activities';
import type { agentRunV3 } from './agent-run';
import { currentRunType, currentRunTypePatch, runWorkflowOptions } from '../model/run-identity';

const poller = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  // A poll whose worker died is tried again on another within this, not after the whole five minutes (meanwhile
  // the schedule skips its fires, as this poll is still under way).
  heartbeatTimeout: '20 seconds',
  // A failed poll is told on the timeline by the activity; the next interval polls again.
  retry: { maximumAttempts: 3 },
});

export async function eventPoll({ triggerId }: { triggerId: string }): Promise<string> {
  const { runs, events } = await poller.pollEventTrigger({ triggerId });
  for (const run of runs) {
    try {
      await startChild<typeof agentRunV3>(patched(currentRunTypePatch) ? currentRunType : 'agentRun', {
        ...runWorkflowOptions(run),
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
  return `${events} events, ${runs.length} runs started`;
}

const marker = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 2 },
});

/**
 * Where an event trigger starts again when its agent is resumed with `skip_missed` (schedules/event-marks.ts): the
 * connection's position now, read by a worker (which reaches the connected systems) while the resume waits for it.
 */
export async function eventMark({ triggerId }: { triggerId: string }): Promise<string | null> {
  return marker.markEventTrigger({ triggerId });
}
