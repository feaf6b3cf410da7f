// A Stripe client per connection (the official `stripe` package), the idempotency keys of its writes, and Stripe's
// errors as step failures. Stripe keeps an idempotency key's answer for 24 hours and answers a repeat with it, so a
// step retried with the same key gets the first customer, invoice or refund back instead of a second one.
import { createHash } from 'node:crypto';
import type Stripe from 'stripe';
import { ApplicationFailure } from '@temporalio/common';
import type { stripeConnector } from '../../../model/connectors/stripe';
import { blockedCause, guardedAgents } from '../../tools/ssrf-guard';
import type { ToolContext } from '../../tools/tool-context';
import { clientCache, type OpenedConnection } from '../connector';

export type StripeConnection = OpenedConnection<typeof stripeConnector>;

async function openClient(c: StripeConnection): Promise<Stripe> {
  const base = c.config.api_base ? new URL(c.config.api_base) : undefined;
  const { default: StripeClient } = await import('stripe'); // loaded on first use
  return new StripeClient(c.credentials.secret_key, {
    // Stripe's own host is a constant; a base the connection names could point inside the operator's network, so
    // every connection goes to a checked address.
    httpAgent: guardedAgents(c.limits.allowHosts)[base?.protocol === 'http:' ? 'http' : 'https'],
    ...(base && {
      host: base.hostname,
      port: base.port || (base.protocol === 'http:' ? 80 : 443),
      protocol: base.protocol === 'http:' ? 'http' : 'https',
    }),
    // One quick retry of a dropped connection or a 5xx, with the same idempotency key; the step's retries do the rest.
    maxNetworkRetries: 1,
    timeout: 30_000,
    telemetry: false,
    appInfo: { name: 'Cadre' },
  });
}

const clients = clientCache<Stripe>(() => undefined);
export const stripeOf = (c: StripeConnection) => clients(c.version, () => openClient(c));

/**
 * The idempotency key of one write of a step: the step's key (stable across its retries) and which write of the
 * step it is, hashed to Stripe's length limit.
 */
export const idempotencyKey = (ctx: ToolContext, write: string) =>
  `cadre-${write}-${createHash('sha256').update(`${ctx.idempotencyKey}|${write}`).digest('hex').slice(0, 40)}`;

/** A key never appears in a message, even one Stripe masked. */
const withoutKeys = (text: string) => text.replace(/\b(sk|rk|pk)_(live|test)?_?\w+/g, '[key]');

interface StripeErrorLike {
  type?: string;
  statusCode?: number;
  code?: string;
  message: string;
  headers?: Record<string, string>;
}

/** Stripe's answer as a step failure: passing faults retry; the rest say what to change. */
export function stripeFailure(c: StripeConnection, err: unknown, doing: string): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const what = `connection "${c.name}" could not ${doing}`;
  const blocked = blockedCause(err);
  if (blocked) return ApplicationFailure.nonRetryable(`${what}: ${blocked.message}`, 'BlockedAddress');
  const e = err as StripeErrorLike;
  const said = withoutKeys(e.message ?? String(err)).slice(0, 500);
  switch (e.type) {
    case 'StripeAuthenticationError':
      return ApplicationFailure.nonRetryable(
        `${what}: Stripe refused its secret key (${e.statusCode ?? 401}): give a secret key (sk_…) or a restricted ` +
          'key (rk_…), not a publishable one (pk_…), and reconnect it in Integrations',
        'StripeAuthentication',
      );
    case 'StripePermissionError':
      return ApplicationFailure.nonRetryable(
        `${what}: its key may not do that (403): give the restricted key that permission in the Stripe dashboard`,
        'StripePermission',
      );
    case 'StripeCardError':
      return ApplicationFailure.nonRetryable(`${what}: the payment was declined: ${said}`, 'StripeCardDeclined');
    case 'StripeIdempotencyError':
      return ApplicationFailure.nonRetryable(
        `${what}: Stripe has this step's write already, with other arguments (${said})`,
        'StripeIdempotency',
      );
    case 'StripeRateLimitError':
    case 'StripeAPIError':
    case 'StripeConnectionError':
      return ApplicationFailure.retryable(`${what}: ${said}`, 'StripeUnavailable');
  }
  if (e.statusCode !== undefined && (e.statusCode >= 500 || e.statusCode === 429))
    return ApplicationFailure.retryable(`${what}: Stripe answered ${e.statusCode}: ${said}`, 'StripeUnavailable');
  if (e.statusCode !== undefined)
    return ApplicationFailure.nonRetryable(
      `${what}: ${said}`,
      e.statusCode === 404 ? 'StripeNotFound' : 'StripeRefused',
    );
  return ApplicationFailure.retryable(`${what}: ${said}`, 'StripeUnavailable');
}

/** How often, and how long at most each time, a call waits out a 429 before the step retries later. */
const rateLimitWaits = 3;
const longestWaitMs = 10_000;

/**
 * Runs one Stripe call, waiting as long as a 429's Retry-After asks (within bounds) and trying again; the call keeps
 * its idempotency key, so trying again is safe. Its failure becomes a step failure.
 */
export async function stripeCall<T>(c: StripeConnection, doing: string, call: (s: Stripe) => Promise<T>): Promise<T> {
  const stripe = await stripeOf(c).catch((err: unknown) => {
    throw stripeFailure(c, err, doing);
  });
  for (let waited = 0; ; waited++) {
    try {
      return await call(stripe);
    } catch (err) {
      const e = err as StripeErrorLike;
      if (e.statusCode !== 429 || waited >= rateLimitWaits) throw stripeFailure(c, err, doing);
      const after = Number(e.headers?.['retry-after']);
      const ms = Number.isFinite(after) && after > 0 ? Math.min(after * 1000, longestWaitMs) : 1000 * 2 ** waited;
      await new Promise((r) => setTimeout(r, ms));
    }
  }
}
