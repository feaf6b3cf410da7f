// Every activity heartbeats while it works, so Temporal notices a lost worker within the heartbeat timeout
// (seconds) instead of the start-to-close timeout (minutes), and so a cancelled run reaches running activities.
import { Context } from '@temporalio/activity';

export const heartbeatEveryMs = 2_000;

export function withHeartbeats<T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      async (...args: never[]) => {
        const ctx = Context.current();
        // A local activity has no heartbeats: the worker running it keeps its workflow task alive instead.
        if (ctx.info.isLocal) return fn(...args);
        // No heartbeat at the start: Temporal counts the heartbeat timeout from the start anyway, and a step that
        // ends within 2 s (most items) then costs no heartbeat write on its workflow.
        const timer = setInterval(() => ctx.heartbeat(), heartbeatEveryMs);
        try {
          return await fn(...args);
        } finally {
          clearInterval(timer);
        }
      },
    ]),
  ) as T;
}
