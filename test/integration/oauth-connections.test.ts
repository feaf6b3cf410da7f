// OAuth 2.0 connections against a real authorization server (oidc-provider, started on this machine): a person is
// sent to the provider's sign-in and consent pages (driven here without a browser, following its redirects with its
// cookies), comes back to the public callback, and the tokens are sealed with the connection; the worker refreshes
// an expired token and one a resource server refused, a refused refresh asks for reconnecting, and removing the
// connection revokes its tokens at the provider.
import assert from 'node:assert/strict';
import { loadSecretBox } from '../../db/secret-box';
import { oauth2StoredCredentialsSchema } from '../../model/connection';
import { oauthAccessToken, oauthFetch } from '../../activities/connectors/oauth/tokens';
import { resolveTools } from '../../activities/tools/resolve';
import { checkedFetch } from '../support/openapi-check';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  startTestRun,
  type Harness,
} from '../support/harness';
import { createApiKey } from '../../db/api-keys';
import { connectionCallback, consentAt } from '../support/oauth-consent';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const callbackBase = connectionCallback;

describe('connections: OAuth 2.0 accounts', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let idp: TestOidcProvider;
  let endpoints: Json;
  let key: string;
  let ws: string;

  before(async () => {
    idp = await startOidcProvider('http://cadre.test/v1/auth/sso/callback', {
      connections: { redirectUri: callbackBase },
    });
    endpoints = (await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as Json;
    h = await createHarness({
      worker: false,
      config: { http: { allowHosts: ['127.0.0.1'] } } as never, // the provider is on this machine
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await idp?.close();
  });

  const call = async (method: string, url: string, json?: unknown, as = key) => {
    const res = await checkedFetch(`${api.url}/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (res.status === 204 ? {} : await res.json()) as Json };
  };
  const create = (name: string) =>
    call('POST', '/connections', {
      name,
      kind: 'oauth2',
      config: {
        issuer: idp.issuer,
        client_id: idp.connectionClient!.id,
        scopes: ['openid', 'email', 'offline_access'],
      },
      credentials: { client_secret: idp.connectionClient!.secret },
    });
  const row = async (id: string) => (await h.stack.knex('connections').where({ id }).first()) as Json;
  const box = () => loadSecretBox(h.config);
  const tokensOf = async (id: string) =>
    oauth2StoredCredentialsSchema.parse(JSON.parse(box().open((await row(id)).credentials_sealed))).tokens;

  /** The provider sends the browser to the public callback (here: the test's API, not cadre.test). */
  const landAt = async (callback: URL) => {
    const res = await fetch(`${api.url}${callback.pathname}${callback.search}`, { redirect: 'manual' });
    assert.equal(res.status, 302);
    return new URL(res.headers.get('location')!, 'http://cadre.test');
  };

  const provider = (path: string, token: string, tokenTypeHint?: string) =>
    fetch(path, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${idp.connectionClient!.id}:${idp.connectionClient!.secret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token, ...(tokenTypeHint ? { token_type_hint: tokenTypeHint } : {}) }).toString(),
    });
  const active = async (token: string) =>
    ((await (await provider(endpoints.introspection_endpoint, token)).json()) as Json).active as boolean;
  const revokeAtProvider = async (token: string, hint: string) =>
    assert.equal((await provider(endpoints.revocation_endpoint, token, hint)).status, 200);
  const userinfo = (token: string) =>
    fetch(endpoints.userinfo_endpoint, { headers: { authorization: `Bearer ${token}` } });

  /** A run of an agent that lists `names`, for the worker's token functions. */
  async function runListing(names: string[]) {
    const agent = await createLiveAgent(h, ws, {
      name: `uses ${names.join(', ')}`,
      connections: names,
      nodes: [{ kind: 'input', id: 'in', next: null }],
    });
    const run = await startTestRun(h, ws, agent.id, '["x"]');
    return { runId: run.id, connections: names };
  }
  const deps = () => ({ knex: h.stack.knex, config: h.config });

  async function connected(name: string) {
    const made = await create(name);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const landed = await landAt(await consentAt(made.body.authorization_url));
    assert.equal(landed.pathname, '/integrations');
    assert.equal(landed.searchParams.get('connected'), name, landed.href);
    return made.body.id as string;
  }

  it('connects an account: pending until a person consents at the provider, then connected with sealed tokens', async () => {
    const made = await create('mail');
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.status, 'pending_authorization');
    const link = new URL(made.body.authorization_url);
    assert.equal(link.origin, idp.issuer);
    assert.equal(link.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(link.searchParams.get('redirect_uri'), callbackBase);
    assert.ok(link.searchParams.get('state'));
    // Stored like a sign-in's: the state hashed, the verifier sealed.
    const pending = await h.stack.knex('connection_authorizations').where({ connection_id: made.body.id });
    assert.equal(pending.length, 1);
    assert.notEqual(pending[0].state_hash, link.searchParams.get('state'));

    // Not usable before it is authorized, and says what to do.
    const run = await runListing(['mail']);
    await assert.rejects(oauthAccessToken(deps(), run, 'mail'), /not authorized yet: authorize it in Integrations/);

    const landed = await landAt(await consentAt(made.body.authorization_url));
    assert.equal(landed.searchParams.get('connected'), 'mail');
    const got = await call('GET', `/connections/${made.body.id}`);
    assert.equal(got.body.status, 'connected');
    assert.match(got.body.status_detail, /offline_access/);
    // The link was used once.
    assert.equal(
      (await landAt(await consentAt(made.body.authorization_url))).searchParams.get('connection_error'),
      'this authorization took too long or was already used: start again from Integrations',
    );

    const tokens = (await tokensOf(made.body.id))!;
    assert.ok(tokens.refresh_token, 'offline access gives a refresh token');
    assert.equal((await userinfo(tokens.access_token)).status, 200);
    // The worker hands out the stored token while it is fresh.
    assert.equal(await oauthAccessToken(deps(), run, 'mail'), tokens.access_token);

    // Neither token is stored in plain text anywhere, nor answered.
    const tables: string[] = (
      await h.stack.knex.raw(`select tablename from pg_tables where schemaname = 'public'`)
    ).rows.map((r: { tablename: string }) => r.tablename);
    for (const table of tables)
      for (const secret of [tokens.access_token, tokens.refresh_token!, idp.connectionClient!.secret]) {
        const n: number = (
          await h.stack.knex.raw(
            `select count(*)::int as n from ${JSON.stringify(table)} t where position(? in row_to_json(t)::text) > 0`,
            [secret],
          )
        ).rows[0].n;
        assert.equal(n, 0, `${table} holds a token in plain text`);
      }
    const answers = JSON.stringify([got.body, (await call('GET', '/connections')).body]);
    assert.ok(!answers.includes(tokens.access_token) && !answers.includes(tokens.refresh_token!));
    assert.ok(!answers.includes('credentials'));
  });

  it('refreshes an expiring token, and a token a resource server refused, in the worker', async () => {
    const id = await connected('calendar');
    const run = await runListing(['calendar']);
    const first = (await tokensOf(id))!;
    // The token expires in under a minute: the worker refreshes it first.
    const sealed = JSON.parse(box().open((await row(id)).credentials_sealed));
    sealed.tokens.expires_at = Date.now() + 30_000;
    await h.stack
      .knex('connections')
      .where({ id })
      .update({ credentials_sealed: box().seal(JSON.stringify(sealed)) });
    const renewed = await oauthAccessToken(deps(), run, 'calendar');
    assert.notEqual(renewed, first.access_token);
    assert.equal((await tokensOf(id))!.access_token, renewed, 'the new token is sealed in the row');
    assert.equal((await userinfo(renewed)).status, 200);
    assert.equal(await active(renewed), true);

    // A token the resource server no longer accepts, though it has not expired (here: one the provider never
    // issued; revoking one at oidc-provider revokes the whole grant's tokens): one retry with a refreshed token.
    const stale = JSON.parse(box().open((await row(id)).credentials_sealed));
    stale.tokens.access_token = 'UnknownToken0123456789abcdefghijklmnopqrstu';
    await h.stack
      .knex('connections')
      .where({ id })
      .update({ credentials_sealed: box().seal(JSON.stringify(stale)) });
    assert.equal((await userinfo(stale.tokens.access_token)).status, 401);
    const res = await oauthFetch(deps(), run, 'calendar')(endpoints.userinfo_endpoint);
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as Json).sub, 'ana@example.test');
    const third = (await tokensOf(id))!.access_token;
    assert.notEqual(third, stale.tokens.access_token);
    assert.equal(await active(third), true);

    // Two activities refused the same token at once: one refreshes under the row's lock, the other takes its token.
    const both = await Promise.all(
      [1, 2].map(() => oauthAccessToken(deps(), run, 'calendar', { refresh: true, rejected: third })),
    );
    assert.equal(both[0], both[1]);
    assert.notEqual(both[0], third);
    assert.equal((await tokensOf(id))!.access_token, both[0]);
  });

  it('marks a connection whose refresh the provider refuses as needing reauthorization; reconnecting brings it back', async () => {
    const id = await connected('drive');
    const run = await runListing(['drive']);
    // The account's access is revoked at the provider.
    await revokeAtProvider((await tokensOf(id))!.refresh_token!, 'refresh_token');
    await assert.rejects(oauthAccessToken(deps(), run, 'drive', { refresh: true }), (err: Error) =>
      /^connection "drive" needs to be authorized again: reconnect it in Integrations/.test(err.message),
    );
    const got = await call('GET', `/connections/${id}`);
    assert.equal(got.body.status, 'needs_reauthorization');
    assert.match(got.body.status_detail, /invalid_grant/);
    await assert.rejects(oauthAccessToken(deps(), run, 'drive'), /needs to be authorized again/);

    const again = await call('POST', `/connections/${id}/authorize`);
    assert.equal(again.status, 200);
    assert.equal((await landAt(await consentAt(again.body.authorization_url))).searchParams.get('connected'), 'drive');
    assert.equal((await call('GET', `/connections/${id}`)).body.status, 'connected');
    assert.equal((await userinfo(await oauthAccessToken(deps(), run, 'drive'))).status, 200);
  });

  it('a REST API connection acts through an OAuth account: its calls carry the token, refreshed on a 401', async () => {
    const id = await connected('profile-account');
    // The provider's own userinfo endpoint, described as a one-operation API.
    const document = {
      openapi: '3.1.0',
      info: { title: 'Profile', version: '1' },
      servers: [{ url: idp.issuer }],
      paths: {
        [new URL(endpoints.userinfo_endpoint).pathname]: {
          get: {
            operationId: 'me',
            responses: {
              '200': {
                description: 'who the token is',
                content: {
                  'application/json': {
                    schema: { type: 'object', required: ['sub'], properties: { sub: { type: 'string' } } },
                  },
                },
              },
            },
          },
        },
      },
    };
    const nowhere = await call('POST', '/connections', {
      name: 'profile',
      kind: 'openapi',
      config: { document, auth: { type: 'oauth2', connection: 'no-such-account' } },
    });
    assert.equal(nowhere.status, 422);
    assert.match(nowhere.body.detail, /no OAuth 2\.0 connection "no-such-account": connect the account first/);
    const made = await call('POST', '/connections', {
      name: 'profile',
      kind: 'openapi',
      config: { document, auth: { type: 'oauth2', connection: 'profile-account' } },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));

    // The stored access token is one the provider refuses: the call is sent again with a refreshed one.
    const stale = JSON.parse(box().open((await row(id)).credentials_sealed));
    stale.tokens.access_token = 'UnknownToken0123456789abcdefghijklmnopqrstu';
    await h.stack
      .knex('connections')
      .where({ id })
      .update({ credentials_sealed: box().seal(JSON.stringify(stale)) });
    const run = await runListing(['profile']);
    const [me] = await resolveTools(['api.profile.me'], deps() as never, run);
    const answer = await me.call!({}, { idempotencyKey: 'k', http: { allowHosts: [] }, smtp: { from: 'x' } });
    assert.deepEqual((answer as Json).status, 200);
    assert.equal((answer as Json).body.sub, 'ana@example.test');
    assert.notEqual((await tokensOf(id))!.access_token, stale.tokens.access_token, 'the refreshed token is kept');
  });

  it('revokes the tokens at the provider when the connection is removed', async () => {
    const id = await connected('crm');
    const tokens = (await tokensOf(id))!;
    assert.equal(await active(tokens.access_token), true);
    assert.equal(await active(tokens.refresh_token!), true);
    assert.equal((await call('DELETE', `/connections/${id}`)).status, 204);
    assert.equal(await active(tokens.access_token), false);
    assert.equal(await active(tokens.refresh_token!), false);
    assert.equal(await row(id), undefined);
  });

  it('leaves the connection as it was when the person refuses, or the state is wrong', async () => {
    const made = await create('tickets');
    const before = await row(made.body.id);
    const refused = await landAt(await consentAt(made.body.authorization_url, { refuse: true }));
    assert.match(refused.searchParams.get('connection_error')!, /"tickets" was not authorized: .*access_denied/);

    const forged = await landAt(new URL(`${callbackBase}?code=abc&state=not-the-state`));
    assert.equal(forged.pathname, '/integrations');
    assert.match(forged.searchParams.get('connection_error')!, /start again from Integrations/);
    const missing = await landAt(new URL(callbackBase));
    assert.match(missing.searchParams.get('connection_error')!, /start again/);
    const after = await row(made.body.id);
    assert.equal(after.status, 'pending_authorization');
    assert.equal(after.credentials_sealed, before.credentials_sealed);
  });

  it('is made by admins only, with a provider it can find, and never takes tokens from the API', async () => {
    const { key: reader } = await createApiKey(h.stack.knex, ws, 'reader', ['read', 'run']);
    const refused = await call(
      'POST',
      '/connections',
      { name: 'nope', kind: 'oauth2', config: { issuer: idp.issuer, client_id: 'x', scopes: [] } },
      reader,
    );
    assert.equal(refused.status, 403);
    assert.equal(await h.stack.knex('connections').where({ workspace_id: ws, name: 'nope' }).first(), undefined);

    const insecure = await call('POST', '/connections', {
      name: 'insecure',
      kind: 'oauth2',
      config: { issuer: 'http://idp.example.com', client_id: 'x', scopes: [] },
    });
    assert.equal(insecure.status, 422);
    assert.match(insecure.body.detail, /https/);
    const nowhere = await call('POST', '/connections', {
      name: 'nowhere',
      kind: 'oauth2',
      config: { authorization_endpoint: `${idp.issuer}/auth`, scopes: [] },
    });
    assert.equal(nowhere.status, 422);

    // Tokens offered in the body are not kept: the connection waits for a person to authorize it.
    const offered = await call('POST', '/connections', {
      name: 'offered',
      kind: 'oauth2',
      config: { issuer: idp.issuer, client_id: idp.connectionClient!.id, scopes: ['openid'] },
      credentials: { client_secret: idp.connectionClient!.secret, tokens: { access_token: 'forged token' } },
    });
    assert.equal(offered.status, 201);
    assert.equal(offered.body.status, 'pending_authorization');
    assert.equal(await tokensOf(offered.body.id), undefined);
    const patched = await call('PATCH', `/connections/${offered.body.id}`, {
      credentials: { client_secret: idp.connectionClient!.secret, tokens: { access_token: 'forged token' } },
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.status, 'pending_authorization');
    assert.equal(await tokensOf(offered.body.id), undefined);
  });
});
