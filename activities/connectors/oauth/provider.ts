// An oauth2 connection's provider, through openid-client: found by discovery from its issuer URL or built from the
// endpoints the admin gave. Every request it makes (discovery, token, revocation) goes through the SSRF guard, so a
// workspace admin cannot point a connection at the operator's internal network; plain http is accepted only for a
// provider on this machine (a development or test provider), as for single sign-on.
import { createHash } from 'node:crypto';
import * as oidc from 'openid-client';
import type { OAuth2Config, OAuth2Tokens } from '../../../model/connection';
import { publicFetch } from '../../tools/ssrf-guard';

const loopback = new Set(['localhost', '127.0.0.1', '[::1]']);

export class OAuthProviderError extends Error {}

function checkScheme(url: string, what: string): URL {
  const u = new URL(url);
  if (u.protocol === 'http:' && !loopback.has(u.hostname))
    throw new OAuthProviderError(`the ${what} must be an https:// URL (http only for a provider on this machine)`);
  return u;
}

/** fetch, refusing internal addresses unless the operator allows their host (CADRE_HTTP_ALLOW_HOSTS). */
function guardedFetch(allowHosts: readonly string[]): oidc.CustomFetch {
  return async (url, options) => {
    checkScheme(url, 'provider endpoint');
    return publicFetch(allowHosts)(url, options as RequestInit);
  };
}

const discovered = new Map<string, { at: number; config: Promise<oidc.Configuration> }>();

/** The provider as openid-client sees it, for this connection's client. Discovery results are kept ten minutes. */
export function oauthProvider(
  config: OAuth2Config,
  clientSecret: string,
  allowHosts: readonly string[],
): Promise<oidc.Configuration> {
  const key = createHash('sha256')
    .update(JSON.stringify([config, clientSecret, allowHosts]))
    .digest('hex');
  const cached = discovered.get(key);
  if (cached && Date.now() - cached.at < 600_000) return cached.config;
  const made = build(config, clientSecret, allowHosts);
  made.catch(() => discovered.delete(key));
  discovered.set(key, { at: Date.now(), config: made });
  return made;
}

async function build(config: OAuth2Config, clientSecret: string, allowHosts: readonly string[]) {
  const auth = clientSecret ? oidc.ClientSecretBasic(clientSecret) : oidc.None();
  const customFetch = guardedFetch(allowHosts);
  const urls = 'issuer' in config ? [config.issuer] : [config.authorization_endpoint, config.token_endpoint];
  const insecure = urls.some((u) => checkScheme(u, 'provider URL').protocol === 'http:');
  let provider: oidc.Configuration;
  if ('issuer' in config) {
    provider = await oidc
      .discovery(new URL(config.issuer), config.client_id, undefined, auth, {
        [oidc.customFetch]: customFetch,
        ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
      })
      .catch((err: unknown) => {
        throw new OAuthProviderError(
          `the provider at ${config.issuer} could not be discovered: ${err instanceof Error ? err.message : String(err)}`,
        );
      });
  } else {
    provider = new oidc.Configuration(
      {
        issuer: new URL(config.token_endpoint).origin,
        authorization_endpoint: config.authorization_endpoint,
        token_endpoint: config.token_endpoint,
        revocation_endpoint: config.revocation_endpoint,
      },
      config.client_id,
      undefined,
      auth,
    );
    if (insecure) oidc.allowInsecureRequests(provider);
  }
  provider[oidc.customFetch] = customFetch;
  const server = provider.serverMetadata();
  if (!server.authorization_endpoint || !server.token_endpoint)
    throw new OAuthProviderError('the provider names no authorization or token endpoint');
  checkScheme(server.token_endpoint, 'token endpoint');
  return provider;
}

/** Whether the provider refused a grant for good (the person revoked it, it expired): only a new authorization helps. */
export const grantRefused = (err: unknown) =>
  err instanceof oidc.ResponseBodyError && (err.error === 'invalid_grant' || err.error === 'unauthorized_client');

/** RFC 7009: revokes the refresh token and the access token, where the provider has a revocation endpoint. */
export async function revokeTokens(provider: oidc.Configuration, tokens: OAuth2Tokens): Promise<boolean> {
  if (!provider.serverMetadata().revocation_endpoint) return false;
  if (tokens.refresh_token)
    await oidc.tokenRevocation(provider, tokens.refresh_token, { token_type_hint: 'refresh_token' });
  await oidc.tokenRevocation(provider, tokens.access_token, { token_type_hint: 'access_token' });
  return true;
}
