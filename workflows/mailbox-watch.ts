// Watches the folder of an email.received trigger with IMAP IDLE, so a message starts its run when it arrives rather
// than at the trigger's next poll (activities/mailbox-watch.ts). Started and stopped with the trigger's schedule
// (schedules/sync.ts): running exactly while the agent is Live. The interval polls go on beside it, so a server
// without IDLE, or a watch that is down, only makes mail wait for the next interval.
import { ActivityFailure, continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';

const watcher = proxyActivities<Activities>({
  startToCloseTimeout: '15 minutes',
  // A worker lost mid-IDLE is noticed within this, and the wait starts again on another.
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 5 },
});

/** IDLE waits (of at most five minutes each) before the history starts afresh. */
const waitsPerHistory = 100;

export async function mailboxWatch({ triggerId, uidNext }: { triggerId: string; uidNext?: number }): Promise<string> {
  let seen = uidNext;
  for (let i = 0; i < waitsPerHistory; i++) {
    try {
      const waited = await watcher.watchMailbox({ triggerId, uidNext: seen });
      if (waited.outcome === 'stopped') return `stopped: ${waited.reason}`;
      if (waited.outcome === 'unsupported') return 'the IMAP server has no IDLE: the trigger polls at its interval';
      seen = waited.uidNext;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The mailbox cannot be reached or refuses the login: the trigger's polls tell it on the timeline, and the
      // watch tries again later rather than ending.
      await sleep('5 minutes');
    }
  }
  return continueAsNew<typeof mailboxWatch>({ triggerId, uidNext: seen });
}
