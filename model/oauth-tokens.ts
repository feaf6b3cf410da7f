// The pure side of an oauth2 connection's provider, shared by the API (authorizing an account) and the worker
// (refreshing its tokens): naming the provider, and the tokens of a token endpoint's answer.
import type { TokenEndpointResponse } from 'openid-client';
import type { OAuth2Config, OAuth2Tokens } from './connection';

/** Where a connection's provider is, for messages. */
export const providerName = (config: OAuth2Config) =>
  'issuer' in config ? config.issuer : new URL(config.token_endpoint).origin;

/** The tokens of a token endpoint's answer, to seal; a refresh answer without a refresh token keeps the old one. */
export function tokensFrom(answer: TokenEndpointResponse, asked: string[], previous?: OAuth2Tokens): OAuth2Tokens {
  return {
    access_token: answer.access_token,
    refresh_token: answer.refresh_token ?? previous?.refresh_token,
    expires_at: typeof answer.expires_in === 'number' ? Date.now() + answer.expires_in * 1000 : undefined,
    token_type: answer.token_type,
    // RFC 6749 §5.1: no scope in the answer means the scopes asked for were granted.
    scopes: answer.scope ? answer.scope.split(' ').filter(Boolean) : (previous?.scopes ?? asked),
  };
}
