// A per-client request budget for public endpoints (forms, sign-in failures): `limit` requests per `windowMs`, counted in this
// process. Enough for one web process; several behind a balancer would each count their own share.
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Counts one request; returns the seconds to wait when the budget is spent, else 0. */
  take(key: string, now = Date.now()): number {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      if (this.windows.size > 10_000) this.prune(now);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    if (w.count >= this.limit) return Math.ceil((w.start + this.windowMs - now) / 1000);
    w.count++;
    return 0;
  }

  /** The seconds to wait when the budget is spent, else 0, without counting a request. */
  blocked(key: string, now = Date.now()): number {
    const w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs || w.count < this.limit) return 0;
    return Math.ceil((w.start + this.windowMs - now) / 1000);
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private prune(now: number): void {
    for (const [key, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(key);
  }
}

/**
 * A request rate per key (API keys): `perSecond` on average, in bursts of up to `burst`. A token bucket rather than
 * a window, so a client that keeps to the rate is never refused, and one that overran waits only until its next
 * request fits. Counted in this process, like RateLimiter.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** Counts one request; returns the seconds to wait when the bucket is empty, else 0. */
  take(key: string, now = Date.now()): number {
    if (this.buckets.size > 10_000) this.prune(now);
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens < 1) return Math.ceil((1 - b.tokens) / this.perSecond);
    b.tokens -= 1;
    return 0;
  }

  /** Buckets that have refilled completely are the same as none. */
  private prune(now: number): void {
    for (const [key, b] of this.buckets)
      if (b.tokens + ((now - b.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(key);
  }
}
