// Waiting out a service's rate limit inside a tool call, within a bound: a short Retry-After is honoured where it is
// met (the step keeps its place), a long one or a limit that persists becomes a retryable failure that Temporal
// retries no sooner than the service asked. Activities heartbeat on their own meanwhile (activities/heartbeat.ts).
import { ApplicationFailure } from '@temporalio/common';

export interface RateLimitBounds {
  /** How many times one call waits and tries again. */
  waits: number;
  /** A Retry-After longer than this is not waited for in the call. */
  maxWaitSeconds: number;
}

export const defaultRateLimitBounds: RateLimitBounds = { waits: 3, maxWaitSeconds: 30 };

/** A rate limit the service answered, and how long it asked to wait. */
export class RateLimited extends Error {
  constructor(
    readonly service: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`${service} is rate limiting the calls (retry after ${retryAfterSeconds} s)`);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls `attempt` until it answers, waiting as asked whenever it throws RateLimited, up to the bounds; other errors
 * pass through. `attempt` must be safe to repeat: a rate-limited request was not carried out.
 */
export async function waitingOutRateLimits<T>(
  attempt: () => Promise<T>,
  what: string,
  bounds: RateLimitBounds = defaultRateLimitBounds,
): Promise<T> {
  for (let waited = 0; ; waited++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof RateLimited)) throw err;
      const seconds = Math.max(0, err.retryAfterSeconds);
      if (waited < bounds.waits && seconds <= bounds.maxWaitSeconds) {
        await sleep(seconds * 1000);
        continue;
      }
      throw ApplicationFailure.create({
        message: `${what}: ${err.service} is still rate limiting the calls after ${waited} wait(s); the step is retried in ${seconds} s`,
        type: 'RateLimited',
        nonRetryable: false,
        nextRetryDelay: Math.max(1, seconds) * 1000,
      });
    }
  }
}
