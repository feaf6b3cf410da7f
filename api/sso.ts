// Single sign-on with OpenID Connect (authorization code flow with PKCE, state and nonce), through openid-client.
// The provider is found by discovery from its issuer URL; plain http is accepted only for a provider on this
// machine (a development or test provider), never across the network.
import * as oidc from 'openid-client';
import type { Knex } from 'knex';
import type { SecretBox } from '../db/secret-box';
import { newToken, tokenHash } from '../db/tokens';
import { ApiError } from './problem';

export interface SsoSettings {
  workspace_id: string;
  issuer: string;
  client_id: string;
  client_secret: string; // sealed
  email_domain: string | null;
  default_role: string;
}

const loopback = new Set(['localhost', '127.0.0.1', '[::1]']);
const discovered = new Map<string, { at: number; config: Promise<oidc.Configuration> }>();

/** The provider's configuration, discovered once and kept for ten minutes. */
export function providerConfig(issuer: string, clientId: string, clientSecret: string): Promise<oidc.Configuration> {
  const key = `${issuer} ${clientId} ${tokenHash(clientSecret)}`;
  const cached = discovered.get(key);
  if (cached && Date.now() - cached.at < 600_000) return cached.config;
  const url = new URL(issuer);
  const insecure = url.protocol === 'http:';
  if (insecure && !loopback.has(url.hostname)) {
    return Promise.reject(new ApiError(422, 'sso_issuer_insecure', 'the issuer must be an https:// URL'));
  }
  const config = oidc
    .discovery(url, clientId, clientSecret, undefined, insecure ? { execute: [oidc.allowInsecureRequests] } : {})
    .catch((err: unknown) => {
      discovered.delete(key);
      throw new ApiError(
        502,
        'sso_provider_unreachable',
        `the identity provider at ${issuer} could not be discovered: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
  discovered.set(key, { at: Date.now(), config });
  return config;
}

export async function startSsoLogin(
  knex: Knex,
  secrets: SecretBox,
  settings: SsoSettings,
  redirectUri: string,
  next: string,
): Promise<URL> {
  const config = await providerConfig(settings.issuer, settings.client_id, secrets.open(settings.client_secret));
  const verifier = oidc.randomPKCECodeVerifier();
  const { token: state, hash } = newToken();
  const nonce = oidc.randomNonce();
  await knex('sso_logins').where('expires_at', '<', knex.fn.now()).delete();
  await knex('sso_logins').insert({
    state_hash: hash,
    workspace_id: settings.workspace_id,
    code_verifier: secrets.seal(verifier),
    nonce,
    next,
    expires_at: new Date(Date.now() + 10 * 60_000),
  });
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
}

/** Checks the provider's answer (state, PKCE, ID token signature, issuer, audience, nonce) and names the person. */
export async function finishSsoLogin(
  knex: Knex,
  secrets: SecretBox,
  callbackUrl: URL,
): Promise<{ workspaceId: string; next: string; email: string; name: string; defaultRole: string }> {
  const state = callbackUrl.searchParams.get('state');
  const pending = state
    ? await knex('sso_logins')
        .where({ state_hash: tokenHash(state) })
        .where('expires_at', '>', knex.fn.now())
        .first()
    : undefined;
  if (!pending) {
    throw new ApiError(400, 'sso_state_invalid', 'this sign-in took too long or was already used; start again');
  }
  await knex('sso_logins').where({ state_hash: pending.state_hash }).delete(); // one use
  const settings: SsoSettings | undefined = await knex('workspace_sso')
    .where({ workspace_id: pending.workspace_id })
    .first();
  if (!settings) throw new ApiError(400, 'sso_not_configured', 'single sign-on is no longer set up for this workspace');
  const config = await providerConfig(settings.issuer, settings.client_id, secrets.open(settings.client_secret));
  let claims: Record<string, unknown> | undefined;
  try {
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: secrets.open(pending.code_verifier),
      expectedState: state!,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const idToken = tokens.claims()!;
    // Many providers put the email in the ID token; others (conforming strictly) only at the userinfo endpoint.
    claims =
      typeof idToken.email === 'string'
        ? idToken
        : { ...idToken, ...(await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub)) };
  } catch (err) {
    throw new ApiError(401, 'sso_failed', `the identity provider's answer was refused: ${(err as Error).message}`);
  }
  const email = typeof claims?.email === 'string' ? claims.email.toLowerCase() : '';
  if (!email || claims?.email_verified === false) {
    throw new ApiError(401, 'sso_email_missing', 'the identity provider did not give a verified email address');
  }
  if (settings.email_domain && !email.endsWith(`@${settings.email_domain}`)) {
    throw new ApiError(403, 'sso_email_domain', `only addresses at ${settings.email_domain} sign in to this workspace`);
  }
  return {
    workspaceId: pending.workspace_id,
    next: pending.next,
    email,
    name: typeof claims?.name === 'string' ? claims.name : '',
    defaultRole: settings.default_role,
  };
}
