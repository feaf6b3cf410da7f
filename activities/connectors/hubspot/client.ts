// A HubSpot connection's client (@hubspot/api-client) and its calls: the private app token or the account's access
// token, the base URL checked against the SSRF guard, none of the client's own retries (its retry decorator ignores
// Retry-After and would send a create again after a 5xx), rate limits waited out as Retry-After asks within bounds,
// one refresh of an account's token that HubSpot refused, and HubSpot's errors as messages a person can act on.
import { createHash } from 'node:crypto';
import type { Agent } from 'node:http';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@hubspot/api-client';
import type { hubspotConnector } from '../../../model/connectors/hubspot';
import { blockedCause, guardedAgents } from '../../tools/ssrf-guard';
import { clientCache, type OpenedConnection } from '../connector';
import { RateLimited, waitingOutRateLimits } from '../rate-limit';
import { actingToken } from '../acting-token';

export type HubspotConnection = OpenedConnection<typeof hubspotConnector>;

const refused = (message: string, type: string) => ApplicationFailure.nonRetryable(message, type);

/** An error HubSpot answered, as @hubspot/api-client throws it (ApiException). */
export interface HubspotApiError {
  code: number;
  body?: { message?: string; category?: string; correlationId?: string };
  headers?: Record<string, string>;
}

export const isApiError = (err: unknown): err is HubspotApiError =>
  typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number';

const tokenOf = (c: HubspotConnection) =>
  actingToken(c, c.credentials.access_token, {
    token: 'an access token',
    remedy: 'give a private app token or name an OAuth 2.0 account',
    type: 'HubspotSettings',
  });

const clients = clientCache<Client>(() => undefined);

/**
 * Every call of the client with call-time options that set `agent`. @hubspot/api-client 13 applies the middleware of
 * its configuration (its `httpAgent` option among them) only to calls given call-time options: its generated APIs
 * start from an empty middleware list otherwise. An API object (`crm.objects.basicApi`) is one with an `api`; its
 * methods take their options last.
 */
function withAgent<T extends object>(target: T, agent: Agent, seen = new WeakMap<object, object>()): T {
  const known = seen.get(target);
  if (known) return known as T;
  const options = {
    middleware: [{ pre: async (ctx: RequestContext) => (ctx.setAgent(agent), ctx), post: async <R>(r: R) => r }],
    middlewareMergeStrategy: 'append',
  };
  const proxy = new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (typeof value === 'function' && 'api' in obj) {
        const declared = (Object.getPrototypeOf(obj) as Record<PropertyKey, unknown>)[prop];
        const arity = typeof declared === 'function' ? declared.length : value.length;
        return (...args: unknown[]) =>
          value.apply(obj, [...args, ...new Array(Math.max(0, arity - 1 - args.length)).fill(undefined), options]);
      }
      return value && typeof value === 'object' ? withAgent(value, agent, seen) : value;
    },
  });
  seen.set(target, proxy);
  return proxy;
}

interface RequestContext {
  setAgent(agent: Agent): void;
}

function clientOf(c: HubspotConnection, token: string): Promise<Client> {
  const digest = createHash('sha256').update(token).digest('hex').slice(0, 16);
  return clients(`${c.version}:${digest}`, async () => {
    const { Client } = await import('@hubspot/api-client'); // loaded on first use
    const client = new Client({
      accessToken: token,
      basePath: c.config.base_url.replace(/\/+$/, ''),
      numberOfApiCallRetries: 0,
    });
    // Every connection, a redirect's too, to a checked address.
    const agents = guardedAgents(c.limits.allowHosts);
    return withAgent(client, new URL(c.config.base_url).protocol === 'http:' ? agents.http : agents.https);
  });
}

/** What HubSpot said, without anything of the request (its answers carry no secrets). */
const said = (err: HubspotApiError) =>
  `${err.code}${err.body?.category ? ` ${err.body.category}` : ''}${err.body?.message ? `: ${err.body.message.slice(0, 300)}` : ''}`;

/** A failure of a HubSpot call as a step's failure. */
export function failureOf(c: HubspotConnection, what: string, err: unknown): unknown {
  if (err instanceof ApplicationFailure) return err;
  const blocked = blockedCause(err);
  if (blocked) return refused(`connection "${c.name}": ${blocked.message}`, 'BlockedAddress');
  if (!isApiError(err)) {
    const reason = (err as Error)?.message ?? String(err);
    return ApplicationFailure.retryable(
      `${what}: HubSpot (${new URL(c.config.base_url).host}) did not answer: ${reason}`,
      'HubspotUnreachable',
    );
  }
  if (err.code === 401)
    return refused(
      `connection "${c.name}" was refused by HubSpot (${said(err)}): ` +
        (c.config.account
          ? `reconnect the account "${c.config.account}" in Integrations`
          : 'give it a valid private app token in Integrations'),
      'HubspotUnauthorized',
    );
  if (err.code === 403)
    return refused(
      `${what}: HubSpot says connection "${c.name}" may not do this (${said(err)}): give its app the CRM scopes it needs`,
      'HubspotForbidden',
    );
  if (err.code === 404) return refused(`${what}: HubSpot has no such record (${said(err)})`, 'HubspotNotFound');
  if (err.code >= 500)
    return ApplicationFailure.retryable(
      `${what}: HubSpot could not do it just now (${said(err)})`,
      'HubspotUnavailable',
    );
  return refused(`${what}: HubSpot refused it (${said(err)})`, 'HubspotRefused');
}

/** Seconds HubSpot asked to wait; its ten-second window when it does not say. */
const retryAfterOf = (err: HubspotApiError) => {
  const header = Object.entries(err.headers ?? {}).find(([k]) => k.toLowerCase() === 'retry-after')?.[1];
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : 10;
};

/**
 * Runs `call` with the connection's client: rate limits waited out (bounded), an account's token that HubSpot
 * refused refreshed once. Errors come back as HubSpot answered them (ApiException) for the caller to read; use
 * `hubspot` for the usual failures.
 */
export async function hubspotRaw<T>(
  c: HubspotConnection,
  what: string,
  call: (client: Client) => Promise<T>,
): Promise<T> {
  let token = await tokenOf(c);
  let refreshed = false;
  for (;;) {
    try {
      return await waitingOutRateLimits(async () => {
        try {
          return await call(await clientOf(c, token));
        } catch (err) {
          if (isApiError(err) && err.code === 429) throw new RateLimited('HubSpot', retryAfterOf(err));
          throw err;
        }
      }, what);
    } catch (err) {
      if (isApiError(err) && err.code === 401 && c.accountToken && !refreshed) {
        refreshed = true;
        token = await c.accountToken({ refresh: true, rejected: token });
        continue;
      }
      throw err;
    }
  }
}

/** `hubspotRaw` with HubSpot's errors turned into step failures. */
export async function hubspot<T>(c: HubspotConnection, what: string, call: (client: Client) => Promise<T>): Promise<T> {
  try {
    return await hubspotRaw(c, what, call);
  } catch (err) {
    throw failureOf(c, what, err);
  }
}
