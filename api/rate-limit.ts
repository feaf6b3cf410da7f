// Request budgets, kept in PostgreSQL so that every web process behind a balancer counts against the same budget
// (DESIGN.md: nothing a web process keeps may live in its memory only). Each check is one atomic upsert; the time
// is the web process's clock, passed in, so tests can set it.
import type { Knex } from 'knex';
import { rateLimitRefusals } from '../services/telemetry/metrics';

/** Counts a refusal under the limiter's own name (`form`, `api-key`, …), without a deployment's budget prefix. */
function refused(scope: string, wait: number): number {
  if (wait > 0) rateLimitRefusals.inc({ limit: scope.slice(scope.lastIndexOf(':') + 1) });
  return wait;
}

/** Old rows are swept now and then by the requests themselves: one request in this many. */
const sweepEvery = 1000;

/** A per-client budget for public endpoints (forms, sign-in failures): `limit` requests per `windowMs`. */
export class RateLimiter {
  constructor(
    private readonly knex: Knex,
    /** Keeps this limiter's keys apart from other limiters' in the shared table. */
    private readonly scope: string,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Counts one request; returns the seconds to wait when the budget is spent, else 0. */
  async take(key: string, now = Date.now()): Promise<number> {
    if (Math.random() * sweepEvery < 1) await this.sweep(now);
    const at = new Date(now);
    const expired = new Date(now - this.windowMs);
    const { rows } = await this.knex.raw(
      `insert into rate_windows as w (key, window_start, count) values (:key, :at::timestamptz, 1)
       on conflict (key) do update set
         window_start = case when w.window_start <= :expired::timestamptz then :at::timestamptz else w.window_start end,
         count = case when w.window_start <= :expired::timestamptz then 1 else w.count + 1 end
       returning window_start, count`,
      { key: `${this.scope}:${key}`, at, expired },
    );
    const { window_start, count } = rows[0] as { window_start: Date; count: number };
    return refused(this.scope, count > this.limit ? this.secondsLeft(window_start, now) : 0);
  }

  /** The seconds to wait when the budget is spent, else 0, without counting a request. */
  async blocked(key: string, now = Date.now()): Promise<number> {
    const w = await this.knex('rate_windows')
      .where({ key: `${this.scope}:${key}` })
      .first('window_start', 'count');
    if (!w || w.window_start.getTime() <= now - this.windowMs || w.count < this.limit) return 0;
    return refused(this.scope, this.secondsLeft(w.window_start, now));
  }

  async reset(key: string): Promise<void> {
    await this.knex('rate_windows')
      .where({ key: `${this.scope}:${key}` })
      .delete();
  }

  private secondsLeft(windowStart: Date, now: number): number {
    return Math.max(1, Math.ceil((windowStart.getTime() + this.windowMs - now) / 1000));
  }

  private sweep(now: number) {
    return this.knex('rate_windows')
      .where('key', 'like', `${this.scope}:%`)
      .andWhere('window_start', '<=', new Date(now - this.windowMs))
      .delete();
  }
}

/**
 * A request rate per key (API keys): `perSecond` on average, in bursts of up to `burst`. A token bucket rather than
 * a window, so a client that keeps to the rate is never refused, and one that overran waits only until its next
 * request fits; a refused request takes no token.
 */
export class TokenBuckets {
  constructor(
    private readonly knex: Knex,
    private readonly scope: string,
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** Counts one request; returns the seconds to wait when the bucket is empty, else 0. */
  async take(key: string, now = Date.now()): Promise<number> {
    if (Math.random() * sweepEvery < 1) await this.sweep(now);
    const at = new Date(now);
    // The bucket refilled for the time since its last request (never beyond the burst; a clock behind the last
    // writer's adds nothing), less the token this request takes if there is one.
    const refilled = `least(:burst::float8, b.tokens + greatest(0, extract(epoch from (:at::timestamptz - b.at))) * :rate::float8)`;
    const { rows } = await this.knex.raw(
      `insert into rate_buckets as b (key, tokens, at, allowed) values (:key, :burst::float8 - 1, :at, true)
       on conflict (key) do update set
         tokens = case when ${refilled} >= 1 then ${refilled} - 1 else ${refilled} end,
         allowed = ${refilled} >= 1,
         at = greatest(b.at, :at)
       returning tokens, allowed`,
      { key: `${this.scope}:${key}`, at, burst: this.burst, rate: this.perSecond },
    );
    const { tokens, allowed } = rows[0] as { tokens: number; allowed: boolean };
    return refused(this.scope, allowed ? 0 : Math.ceil((1 - tokens) / this.perSecond));
  }

  /** Buckets that have refilled completely are the same as none. */
  private sweep(now: number) {
    return this.knex('rate_buckets')
      .where('key', 'like', `${this.scope}:%`)
      .andWhere('at', '<=', new Date(now - (this.burst / this.perSecond) * 1000))
      .delete();
  }
}
