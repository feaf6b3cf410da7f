// Signing in with single sign-on over HTTP, against the real OpenID Connect provider the SSO tests use
// (test/support/oidc-provider.ts): the provider's sign-in and consent pages followed as a browser would, then the
// API's callback. Each sign-in is recorded as `sso.login` in the workspace's audit log (the first also as
// `member.joined`), and one that the person refuses at the provider records none.
import assert from 'node:assert/strict';
import { consentAt } from '../support/oauth-consent';
import { configureWorkspaceSso, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
type Json = any;

const callback = 'http://cadre.test/v1/auth/sso/callback';

describe('single sign-on: sso.login in the audit log', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let idp: TestOidcProvider;
  let key = '';
  let workspaceId = '';

  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h); // its public address is http://cadre.test, the provider's registered callback
    idp = await startOidcProvider(callback);
    const t = await createTestWorkspace(h);
    key = t.key;
    workspaceId = t.workspace.id;
    await configureWorkspaceSso(api.url, key, idp, 'sso-login.test'); // the console flow has sso.test
  });
  after(async () => {
    await idp?.close();
    await api?.close();
    await h?.close();
  });

  /** From the email a person types to where the API sends their browser after the provider, with the cookies set. */
  async function signInWithSso(email: string, opts: { refuse?: boolean } = {}) {
    const found = await fetch(`${api.url}/v1/auth/sso/discover?email=${encodeURIComponent(email)}`);
    assert.equal(found.status, 200);
    const { start_url: startUrl } = (await found.json()) as Json;
    const start = await fetch(`${api.url}${startUrl}?next=%2Fapprovals`, { redirect: 'manual' });
    assert.equal(start.status, 302);
    const back = await consentAt(start.headers.get('location')!, { login: email, refuse: opts.refuse, callback });
    const landed = await fetch(`${api.url}${back.pathname}${back.search}`, { redirect: 'manual' });
    assert.equal(landed.status, 302);
    const cookie = landed.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    return { to: landed.headers.get('location')!, cookie };
  }

  const auditLog = async (): Promise<Json[]> => {
    const res = await fetch(`${api.url}/v1/audit-log?limit=100`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    return ((await res.json()) as Json).data;
  };
  const ssoLogins = async (email: string) =>
    (await auditLog()).filter((e) => e.action === 'sso.login' && e.actor === email);

  it('records each sign-in as sso.login for the workspace, shown in its audit log; joining once as member.joined', async () => {
    const email = 'sam@sso-login.test';
    const first = await signInWithSso(email);
    assert.equal(first.to, '/approvals');
    const me = await fetch(`${api.url}/v1/me`, { headers: { cookie: first.cookie } });
    assert.equal(me.status, 200, 'the session works');
    const who = (await me.json()) as Json;
    assert.equal(who.user.email, email);
    assert.equal(who.workspace.role, 'operator');

    const logins = await ssoLogins(email);
    assert.equal(logins.length, 1);
    assert.deepEqual(logins[0].details, { via: 'sso' });
    const joined = (await auditLog()).filter((e) => e.action === 'member.joined' && e.target === email);
    assert.equal(joined.length, 1);
    assert.equal(joined[0].details.role, 'operator');
    const stored = await h.stack.knex('audit_events').where({ action: 'sso.login', actor: email });
    assert.deepEqual(
      stored.map((r) => r.workspace_id),
      [workspaceId],
      'recorded with the workspace, not without one',
    );

    // Signing in again is another sso.login, not another joining.
    await signInWithSso(email);
    assert.equal((await ssoLogins(email)).length, 2);
    assert.equal((await auditLog()).filter((e) => e.action === 'member.joined' && e.target === email).length, 1);
  });

  it('records no sso.login when the person refuses at the provider, and says why on the sign-in page', async () => {
    const email = 'ria@sso-login.test';
    const refused = await signInWithSso(email, { refuse: true });
    assert.match(refused.to, /^\/login\?sso_error=/);
    assert.equal(refused.cookie, '', 'no session');
    assert.deepEqual(await ssoLogins(email), []);
  });
});
