// Secrets handed out once (API keys, webhook signing secrets, Run Mode tokens, passwords, session and CSRF
// tokens, two-factor secrets and recovery codes, invitation links, SSO client secrets) are never stored as they
// are: a scan of every table finds none of them.
import assert from 'node:assert/strict';
import * as OTPAuth from 'otpauth';
import { Person } from '../support/people';
import { startOidcProvider } from '../support/oidc-provider';
import { createLogger } from '../../api/logger';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';

describe('secrets at rest', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  // Everything the API logs during the test, at the level a deployment logs at.
  const logLines: string[] = [];
  before(async () => {
    h = await createHarness({ worker: false });
    const logger = createLogger('info', 'web', { write: (line: string) => void logLines.push(line) });
    api = await startApi(h, { logger });
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  it('keeps no key, token, password or other secret in plain text in any table', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'hooked',
      nodes: [{ kind: 'input', id: 'in', next: null }],
      policy: { public_access: true },
    });
    const post = async (path: string, body: unknown) =>
      (await (
        await fetch(`${api.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as Record<string, string>;
    const hook = await post(`/v1/agents/${agent.id}/triggers`, { kind: 'webhook' });
    const link = await post(`/v1/agents/${agent.id}/run-links`, {});
    const created = await post('/v1/api-keys', { name: 'another', scopes: ['read'] });
    const secrets = [key, created.key, hook.secret, hook.secret.slice('whsec_'.length), link.token];

    // A person: password, session and CSRF tokens, a two-factor secret with its recovery codes, an invitation.
    const person = new Person(api.url);
    await person.signUp();
    const session = person.cookies.get('cadre_session')!;
    const twoFactor = (await person.call('/me/two-factor', { method: 'POST' })).body;
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(twoFactor.secret) });
    const codes = (await person.call('/me/two-factor/confirm', { json: { code: totp.generate() } })).body
      .recovery_codes;
    const invitation = (await person.call('/invitations', { json: { role: 'viewer' } })).body.url.split('/invite/')[1];
    secrets.push(person.password, session, person.csrf!, twoFactor.secret, ...codes, invitation);
    // Accepting the invitation and signing in again put tokens in URLs and cookies.
    const joiner = new Person(api.url);
    await joiner.call(`/public/invitations/${invitation}`);
    await joiner.call(`/public/invitations/${invitation}/accept`, {
      json: { email: joiner.email, password: joiner.password },
    });
    await person.signIn({ totp_code: totp.generate() });
    secrets.push(joiner.password, joiner.cookies.get('cadre_session')!, person.cookies.get('cadre_session')!);
    // An identity provider's client secret.
    const idp = await startOidcProvider('http://cadre.test/v1/auth/sso/callback');
    try {
      const sso = await fetch(`${api.url}/v1/workspace/sso`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret }),
      });
      assert.equal(sso.status, 200);
    } finally {
      await idp.close();
    }
    secrets.push(idp.clientSecret);
    assert.ok(secrets.every((s) => typeof s === 'string' && s.length >= 10));

    const tables: string[] = (
      await h.stack.knex.raw(`select tablename from pg_tables where schemaname = 'public'`)
    ).rows.map((r: { tablename: string }) => r.tablename);
    assert.ok(
      ['api_keys', 'triggers', 'run_links', 'users', 'sessions', 'workspace_sso'].every((t) => tables.includes(t)),
    );
    const holding = async (table: string, text: string) =>
      (
        await h.stack.knex.raw(
          `select count(*)::int as n from ${JSON.stringify(table)} t where position(? in row_to_json(t)::text) > 0`,
          [text],
        )
      ).rows[0].n as number;
    // The scan finds what is stored (the key's lookup prefix is), so finding nothing below means something.
    assert.equal(await holding('api_keys', created.prefix), 1);
    for (const table of tables) {
      for (const secret of secrets) {
        assert.equal(await holding(table, secret), 0, `${table} holds a secret in plain text`);
      }
    }
    const log = logLines.join('');
    assert.match(log, /\/v1\/public\/invitations\/\[redacted\]\/accept/, 'the requests were logged');
    for (const secret of secrets) assert.ok(!log.includes(secret), `the log holds a secret: ${secret.slice(0, 6)}…`);
  });
});
