// An oauth2 connection authorized the way a person does it, without a browser: the provider's sign-in and consent
// pages (test/support/oidc-provider.ts) followed with their cookies, and the browser's landing at the API's public
// callback. Also the provider's introspection (RFC 7662), for a fake resource server to accept its access tokens.
import assert from 'node:assert/strict';
import type { ConnectorApi } from './connections';
import type { TestOidcProvider } from './oidc-provider';

/** Where the test provider sends the browser back for connections (the API serves it at its own address). */
export const connectionCallback = 'http://cadre.test/v1/connections/oauth/callback';

/** A person at the provider signs in and grants (or refuses) access; answers where the browser is sent back. */
export async function consentAt(
  authorizationUrl: string,
  /** `callback`: where the provider sends the browser back (connections' callback, or single sign-on's). */
  opts: { login?: string; refuse?: boolean; callback?: string } = {},
): Promise<URL> {
  const callback = opts.callback ?? connectionCallback;
  const login = opts.login ?? 'ana@example.test';
  const cookies = new Map<string, string>();
  let url = new URL(authorizationUrl);
  let init: RequestInit = {};
  for (let hop = 0; hop < 20; hop++) {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [k, v] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      if (v) cookies.set(k, v);
      else cookies.delete(k);
    }
    init = {};
    const location = res.headers.get('location');
    if (location) {
      url = new URL(location, url);
      if (url.href.startsWith(callback)) return url;
      continue;
    }
    const page = await res.text();
    assert.equal(res.status, 200, page.slice(0, 300));
    const form = /<form[^>]*action="([^"]+)"[^>]*>[\s\S]*?name="prompt" value="(\w+)"/.exec(page);
    assert.ok(form, `a sign-in or consent form: ${page.slice(0, 300)}`);
    const [, action, prompt] = form;
    if (prompt === 'consent' && opts.refuse) {
      url = new URL(`${action}/abort`, url);
      continue;
    }
    url = new URL(action, url);
    init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(prompt === 'login' ? { prompt, login, password: 'any' } : { prompt }).toString(),
    };
  }
  throw new Error('the provider never sent the browser back');
}

/** Makes an oauth2 connection at the test provider and authorizes it; answers its id. */
export async function connectOAuthAccount(
  c: ConnectorApi,
  apiUrl: string,
  idp: TestOidcProvider,
  name: string,
): Promise<string> {
  const made = await c.connect(
    name,
    'oauth2',
    { issuer: idp.issuer, client_id: idp.connectionClient!.id, scopes: ['openid', 'email', 'offline_access'] },
    { client_secret: idp.connectionClient!.secret },
  );
  const back = await consentAt(made.authorization_url);
  const landed = await fetch(`${apiUrl}${back.pathname}${back.search}`, { redirect: 'manual' });
  assert.equal(landed.status, 302);
  const to = new URL(landed.headers.get('location')!, 'http://cadre.test');
  assert.equal(to.searchParams.get('connected'), name, to.href);
  return made.id as string;
}

/** Whether the provider says the access token is active (its introspection, as the connection client). */
export async function introspects(idp: TestOidcProvider, token: string): Promise<boolean> {
  const discovery = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as {
    introspection_endpoint: string;
  };
  const { id, secret } = idp.connectionClient!;
  const res = await fetch(discovery.introspection_endpoint, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token }).toString(),
  });
  return res.ok && ((await res.json()) as { active?: boolean }).active === true;
}
