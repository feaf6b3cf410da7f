// OAuth 2.0 connections (kind "oauth2"): a person authorizes the account at the provider (authorization code with
// PKCE and state), the provider sends the browser back to the public callback here, and the tokens it grants are
// sealed with the connection. The state is stored hashed and the code verifier sealed, each used once, as for single
// sign-on (api/sso.ts). Removing a connection revokes its tokens at the provider (RFC 7009).
import { Router, type Request } from 'express';
import type { Route } from '../openapi-schemas';
import type { Knex } from 'knex';
import * as oidc from 'openid-client';
import { recordAudit } from '../../db/audit';
import {
  connectionByName,
  startConnectionAuthorization,
  takeConnectionAuthorization,
  updateConnection,
  type ConnectionRow,
} from '../../db/connections';
import type { SecretBox } from '../../db/secret-box';
import { newToken, tokenHash } from '../../db/tokens';
import {
  oauth2StoredCredentialsSchema,
  tokenDestinationRefusal,
  type OAuth2Config,
  type OAuth2Credentials,
} from '../../model/connection';
import { providerName, tokensFrom } from '../../model/oauth-tokens';
import type { Adapters } from '../../services/adapters';
import type { Logger } from '../logger';
import { ApiError } from '../problem';
import type { Links } from '../../services/runs/json';

export interface ConnectionOAuthDeps {
  knex: Knex;
  secrets: SecretBox;
  links: Links;
  connectors: { allowHosts: readonly string[] };
  adapters: Pick<Adapters, 'oauth'>;
  logger?: Logger;
}

export const oauthCallbackPath = '/v1/connections/oauth/callback';

export function oauthCredentialsOf(secrets: SecretBox, c: ConnectionRow): OAuth2Credentials {
  return oauth2StoredCredentialsSchema.parse(JSON.parse(secrets.open(c.credentials_sealed)));
}

async function providerOf(deps: ConnectionOAuthDeps, c: ConnectionRow, credentials: OAuth2Credentials) {
  try {
    return await deps.adapters.oauth.provider(
      c.config as OAuth2Config,
      credentials.client_secret,
      deps.connectors.allowHosts,
    );
  } catch (err) {
    const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300);
    throw new ApiError(422, 'connection_failed', `could not reach the OAuth provider: ${reason}`);
  }
}

/** A one-time link to the provider's consent page for this connection (ten minutes, one use). */
/**
 * The access token the workspace's oauth2 connection `name` holds now, for a check made from the API (runs refresh
 * theirs in the worker: activities/connectors/oauth/tokens.ts).
 */
export async function currentAccessToken(
  knex: Knex,
  secrets: SecretBox,
  workspaceId: string,
  name: string,
  sentTo?: string,
) {
  const account = await connectionByName(knex, workspaceId, name);
  if (account?.kind !== 'oauth2') throw new Error(`the workspace has no OAuth 2.0 connection "${name}"`);
  const misdirected = sentTo && tokenDestinationRefusal(name, account.config as OAuth2Config, sentTo);
  if (misdirected) throw new Error(misdirected);
  const token = oauthCredentialsOf(secrets, account).tokens?.access_token;
  if (account.status !== 'connected' || !token)
    throw new Error(`the account "${name}" is not authorized: authorize it in Integrations first`);
  return token;
}

export async function authorizationUrl(deps: ConnectionOAuthDeps, c: ConnectionRow, startedBy: string) {
  const config = c.config as OAuth2Config;
  const provider = await providerOf(deps, c, oauthCredentialsOf(deps.secrets, c));
  const verifier = oidc.randomPKCECodeVerifier();
  const { token: state, hash } = newToken();
  await startConnectionAuthorization(deps.knex, {
    state_hash: hash,
    connection_id: c.id,
    code_verifier: deps.secrets.seal(verifier),
    started_by: startedBy,
  });
  return oidc.buildAuthorizationUrl(provider, {
    redirect_uri: `${deps.links.publicUrl}${oauthCallbackPath}`,
    ...(config.scopes.length ? { scope: config.scopes.join(' ') } : {}),
    ...(config.audience ? { audience: config.audience } : {}),
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    // The person grants access now (and providers issue a refresh token for offline access only with consent).
    prompt: 'consent',
  }).href;
}

/** RFC 7009 at the provider before the connection is removed; a failure is logged, never fatal. */
export async function revokeConnectionTokens(deps: ConnectionOAuthDeps, c: ConnectionRow): Promise<void> {
  try {
    const credentials = oauthCredentialsOf(deps.secrets, c);
    if (!credentials.tokens) return;
    const provider = await deps.adapters.oauth.provider(
      c.config as OAuth2Config,
      credentials.client_secret,
      deps.connectors.allowHosts,
    );
    if (!(await deps.adapters.oauth.revokeTokens(provider, credentials.tokens)))
      deps.logger?.info({ connection: c.id }, 'the OAuth provider has no revocation endpoint: tokens not revoked');
  } catch (err) {
    deps.logger?.warn(
      { connection: c.id, reason: err instanceof Error ? err.message : String(err) },
      'could not revoke the connection tokens at its OAuth provider',
    );
  }
}

/** The public callback: the browser lands here from the provider and goes on to the console's Integrations page. */
export function connectionOAuthPublicRoutes(deps: ConnectionOAuthDeps): Router {
  const r = Router();
  const back = (params: Record<string, string>) => `/integrations?${new URLSearchParams(params)}`;

  r.get('/connections/oauth/callback', async (req, res) => {
    try {
      const name = await finish(req);
      res.redirect(302, back({ connected: name }));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      res.redirect(302, back({ connection_error: err.message }));
    }
  });

  const finish = async (req: Request): Promise<string> => {
    const here = new URL(req.originalUrl, deps.links.publicUrl);
    const state = here.searchParams.get('state');
    const pending = state ? await takeConnectionAuthorization(deps.knex, tokenHash(state)) : undefined;
    if (!pending)
      throw new ApiError(
        400,
        'authorization_state_invalid',
        'this authorization took too long or was already used: start again from Integrations',
      );
    const c: ConnectionRow | undefined = await deps.knex('connections').where({ id: pending.connection_id }).first();
    if (!c) throw new ApiError(404, 'connection_not_found', 'the connection was removed while it was being authorized');
    const providerError = here.searchParams.get('error');
    if (providerError) {
      const description = here.searchParams.get('error_description');
      throw new ApiError(
        400,
        'authorization_refused',
        `"${c.name}" was not authorized: the provider said ${providerError.slice(0, 100)}${description ? ` (${description.slice(0, 300)})` : ''}`,
      );
    }
    const credentials = oauthCredentialsOf(deps.secrets, c);
    const provider = await providerOf(deps, c, credentials);
    const config = c.config as OAuth2Config;
    let answer: oidc.TokenEndpointResponse;
    try {
      answer = await oidc.authorizationCodeGrant(
        provider,
        here,
        { pkceCodeVerifier: deps.secrets.open(pending.code_verifier), expectedState: state! },
        config.audience ? { audience: config.audience } : undefined,
      );
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new ApiError(
        400,
        'authorization_failed',
        `"${c.name}" was not authorized: ${providerName(config)} refused the exchange: ${reason.slice(0, 300)}`,
      );
    }
    const tokens = tokensFrom(answer, config.scopes);
    await updateConnection(deps.knex, c.id, {
      credentials_sealed: deps.secrets.seal(JSON.stringify({ ...credentials, tokens })),
      status: 'connected',
      status_detail: `authorized; scopes granted: ${tokens.scopes.join(' ') || 'none'}`,
    });
    await recordAudit(deps.knex, {
      workspace_id: c.workspace_id,
      user_id: null,
      actor: pending.started_by,
      action: 'connection.authorized',
      target: c.name,
      details: { scopes: tokens.scopes, refresh_token: tokens.refresh_token !== undefined },
      ip: req.ip,
    });
    return c.name;
  };

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const connectionOAuthRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/connections/oauth/callback',
    id: 'finishConnectionAuthorization',
    summary:
      "OAuth 2.0: the provider's redirect back (code and state); seals the tokens and redirects to the console's /integrations with ?connected= or ?connection_error=",
    scope: 'public',
    ok: { 302: null },
  },
];
