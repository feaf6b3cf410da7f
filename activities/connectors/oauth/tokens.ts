// Access tokens of oauth2 connections for runs, in the worker (never in workflow code): a valid token for a
// connection the agent lists, refreshed when it expires within a minute or when a caller was answered 401. A refresh
// happens under a lock on the connection's row, so two activities never spend the same refresh token (providers may
// let one be used once); a refusal marks the connection needs_reauthorization, since only a person can fix it.
import { ApplicationFailure } from '@temporalio/common';
import * as oidc from 'openid-client';
import type { ConnectionRow } from '../../../db/connections';
import {
  oauth2StoredCredentialsSchema,
  tokenDestinationRefusal,
  type OAuth2Config,
  type OAuth2Tokens,
} from '../../../model/connection';
import { blockedCause } from '../../tools/ssrf-guard';
import { secretBoxOf, usableConnection, wrongKind, type Deps, type RunConnections } from '../connections';
import { grantRefused, oauthProvider, OAuthProviderError } from './provider';
import { tokensFrom } from '../../../model/oauth-tokens';

/** Refreshed when it expires within this long. */
export const refreshMargin = 60_000;

const fresh = (t: OAuth2Tokens) => t.expires_at === undefined || t.expires_at - Date.now() > refreshMargin;

const reauthorize = (name: string, reason: string) =>
  ApplicationFailure.nonRetryable(
    `connection "${name}" needs to be authorized again: reconnect it in Integrations (${reason})`,
    'ConnectionUnusable',
  );

export interface TokenOptions {
  /** Refresh even if the token has not expired (the resource server answered 401). */
  refresh?: boolean;
  /** Where the token will be sent: refused unless it is one of the provider's hosts (tokenDestinationRefusal). */
  sentTo?: string;
  /** The token that was refused: not refreshed again when another activity already replaced it. */
  rejected?: string;
}

/** A valid access token of the oauth2 connection `name`, which the run's agent lists. */
export async function oauthAccessToken(
  deps: Deps,
  run: RunConnections,
  name: string,
  opts: TokenOptions = {},
): Promise<string> {
  const row = await usableConnection(deps, run, name);
  if (row.kind !== 'oauth2') wrongKind(name, row, 'an OAuth 2.0 account');
  const misdirected = opts.sentTo && tokenDestinationRefusal(name, row.config as OAuth2Config, opts.sentTo);
  if (misdirected) throw ApplicationFailure.nonRetryable(misdirected, 'TokenMisdirected');
  const { tokens } = oauth2StoredCredentialsSchema.parse(
    JSON.parse(secretBoxOf(deps.config).open(row.credentials_sealed)),
  );
  if (!tokens) throw reauthorize(name, 'it holds no token');
  if (!opts.refresh && fresh(tokens)) return tokens.access_token;
  const outcome = await refreshUnderLock(deps, row.id, name, opts);
  if ('refused' in outcome) throw reauthorize(name, outcome.refused);
  return outcome.token;
}

async function refreshUnderLock(
  deps: Deps,
  id: string,
  name: string,
  opts: TokenOptions,
): Promise<{ token: string } | { refused: string }> {
  const box = secretBoxOf(deps.config);
  // The status change commits before the failure is thrown (outside the transaction).
  return deps.knex.transaction(async (trx) => {
    const row: ConnectionRow | undefined = await trx('connections').where({ id }).forUpdate().first();
    if (!row)
      throw ApplicationFailure.nonRetryable(
        `there is no connection "${name}" in this workspace (it was removed): connect it in Integrations`,
        'ConnectionMissing',
      );
    if (row.status !== 'connected' && row.status !== 'failing') return { refused: row.status_detail ?? row.status };
    const credentials = oauth2StoredCredentialsSchema.parse(JSON.parse(box.open(row.credentials_sealed)));
    const tokens = credentials.tokens;
    if (!tokens) return { refused: 'it holds no token' };
    // Another activity refreshed while this one waited for the lock.
    const replaced = opts.rejected !== undefined && tokens.access_token !== opts.rejected;
    if (fresh(tokens) && (!opts.refresh || replaced)) return { token: tokens.access_token };

    const refused = async (detail: string) => {
      await trx('connections')
        .where({ id })
        .update({ status: 'needs_reauthorization', status_detail: detail, updated_at: trx.fn.now() });
      return { refused: detail };
    };
    if (!tokens.refresh_token) return refused('its access token expired and the provider gave no refresh token');
    const config = row.config as OAuth2Config;
    let answer: oidc.TokenEndpointResponse;
    try {
      const provider = await oauthProvider(config, credentials.client_secret, deps.config.http.allowHosts);
      answer = await oidc.refreshTokenGrant(
        provider,
        tokens.refresh_token,
        config.audience ? { audience: config.audience } : undefined,
      );
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (grantRefused(err))
        return refused(`the provider refused to refresh its token: ${(err as oidc.ResponseBodyError).error}`);
      const blocked = blockedCause(err);
      if (blocked || err instanceof OAuthProviderError)
        throw ApplicationFailure.nonRetryable(
          `connection "${name}": ${blocked?.message ?? reason}`,
          'ConnectionRefused',
        );
      throw ApplicationFailure.retryable(
        `connection "${name}" could not refresh its token at the provider: ${reason}`,
        'OAuthUnreachable',
      );
    }
    const renewed = tokensFrom(answer, config.scopes, tokens);
    await trx('connections')
      .where({ id })
      .update({
        credentials_sealed: box.seal(JSON.stringify({ ...credentials, tokens: renewed })),
        updated_at: trx.fn.now(),
      });
    return { token: renewed.access_token };
  });
}

type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * fetch with the connection's bearer token; a 401 gets one more try with a refreshed token. The request body must be
 * one that can be sent twice (a string, bytes, URLSearchParams, not a stream).
 */
export function withOAuthBearer(token: (opts?: TokenOptions) => Promise<string>, fetchLike: FetchLike = fetch) {
  return async (input: string | URL, init: RequestInit = {}): Promise<Response> => {
    const send = (t: string) => {
      const headers = new Headers(init.headers);
      headers.set('authorization', `Bearer ${t}`);
      return fetchLike(input, { ...init, headers });
    };
    const first = await token();
    const res = await send(first);
    if (res.status !== 401) return res;
    await res.body?.cancel();
    return send(await token({ refresh: true, rejected: first }));
  };
}

/** What a connector calls: fetch as the oauth2 connection `name` of the run (bearer token, refreshed on 401). */
export const oauthFetch = (deps: Deps, run: RunConnections, name: string, fetchLike?: FetchLike) =>
  withOAuthBearer((opts) => oauthAccessToken(deps, run, name, opts), fetchLike);
