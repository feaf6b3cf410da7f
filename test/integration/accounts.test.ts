// Accounts over real HTTP: sign-up and sign-in with session cookies and CSRF, throttling, signing out
// everywhere, password change and reset (through a real SMTP server), two-factor with TOTP, invitations,
// roles (every role against every route of the OpenAPI document), workspace isolation and the audit log.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import * as OTPAuth from 'otpauth';
import { routes } from '../../api/openapi';
import { loginThrottle } from '../../api/routes/accounts';
import { createApiKey } from '../../db/api-keys';
import { roles, type Role } from '../../db/roles';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  startTestRun,
  type Harness,
} from '../support/harness';
import { memberWithRole, Person } from '../support/people';
import { startSmtpSink, type SmtpSink } from '../support/sinks';

const agentSpec = {
  name: 'Isolated',
  nodes: [{ kind: 'input', id: 'in', next: null }],
};

describe('Accounts, sessions and roles', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let smtp: SmtpSink;
  before(async () => {
    h = await createHarness({ worker: false });
    smtp = await startSmtpSink();
    api = await startApi(h, { smtp: { url: smtp.url, from: 'Cadre <cadre@test>' } });
  });
  after(async () => {
    await api?.close();
    await smtp?.close();
    await h?.close();
  });

  const lastLinkTo = (email: string, path: string) => {
    const message = [...smtp.messages].reverse().find((m) => m.to.includes(email));
    assert.ok(message, `an email reached ${email}`);
    const body = message.raw.replace(/=\r?\n/g, '');
    const m = new RegExp(`http://cadre\\.test/${path}/([A-Za-z0-9_-]+)`).exec(body);
    assert.ok(m, `the email holds a ${path} link: ${body.slice(-400)}`);
    return m[1];
  };

  it('signs up into a workspace it owns, with an HttpOnly SameSite session cookie, and works in it', async () => {
    const p = new Person(api.url);
    const res = await p.signUp({ name: 'Ada', workspace_name: 'Ada Ltd' });
    assert.equal(res.status, 201);
    const set = res.headers.getSetCookie();
    const session = set.find((c) => c.startsWith('cadre_session='))!;
    assert.match(session, /HttpOnly/i);
    assert.match(session, /SameSite=Lax/i);
    assert.ok(!set.find((c) => c.startsWith('cadre_csrf='))!.match(/HttpOnly/i), 'the CSRF cookie is readable');
    const me = await p.call('/me');
    assert.equal(me.body.user.email, p.email);
    assert.deepEqual([me.body.workspace.name, me.body.workspace.role], ['Ada Ltd', 'owner']);
    assert.deepEqual(me.body.workspace.permissions, ['read', 'run', 'manage', 'admin', 'owner']);
    const created = await p.call('/agents', { json: agentSpec });
    assert.equal(created.status, 201);
    assert.equal((await p.call('/agents')).body.data.length, 1);

    assert.equal((await new Person(api.url, p.email).signUp()).body.code, 'email_taken');
    assert.equal((await new Person(api.url, 'not-an-email').signUp()).status, 422);
    const short = await new Person(api.url, undefined, 'short').signUp();
    assert.equal(short.status, 422);
    assert.match(short.body.detail, /at least 10 characters/);
  });

  it('refuses a change made with the session cookie but without the CSRF token', async () => {
    const p = new Person(api.url);
    await p.signUp();
    const forged = await p.call('/agents', { json: agentSpec, csrf: false });
    assert.equal(forged.status, 403);
    assert.equal(forged.body.code, 'csrf_token_invalid');
    const wrong = Object.assign(new Person(api.url), { cookies: p.cookies, csrf: 'guess' });
    assert.equal((await wrong.call('/agents', { json: agentSpec })).body.code, 'csrf_token_invalid');
    assert.equal((await p.call('/agents')).body.data.length, 0, 'nothing was created');
    assert.equal((await p.call('/agents', { json: agentSpec })).status, 201);
  });

  it('says the same for an unknown address and a wrong password, and throttles repeated failures', async () => {
    const p = new Person(api.url);
    await p.signUp();
    const unknown = await new Person(api.url).signIn();
    const wrong = await p.signIn({ password: 'wrong password!' });
    assert.deepEqual([unknown.status, unknown.body.code], [401, 'invalid_credentials']);
    assert.deepEqual([wrong.status, wrong.body.code], [401, 'invalid_credentials']);
    assert.equal(wrong.body.detail, unknown.body.detail);
    for (let i = 1; i < loginThrottle.perEmail; i++) await p.signIn({ password: 'wrong password!' });
    const blocked = await p.signIn(); // even the right password waits now
    assert.equal(blocked.status, 429);
    assert.equal(blocked.body.code, 'too_many_sign_in_attempts');
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
  });

  it('ends every session on logout-everywhere, and the others on a password change', async () => {
    const laptop = new Person(api.url);
    await laptop.signUp();
    const phone = new Person(api.url, laptop.email, laptop.password);
    await phone.signIn();
    assert.equal((await phone.call('/me')).status, 200);

    const changed = await laptop.call('/me/password', {
      json: { current_password: laptop.password, new_password: 'a brand new password' },
    });
    assert.equal(changed.status, 204);
    assert.equal((await phone.call('/me')).body.code, 'session_expired', 'the other session ended');
    assert.equal((await laptop.call('/me')).status, 200, 'this one goes on');
    assert.equal((await phone.signIn()).status, 401, 'the old password no longer works');
    const tablet = new Person(api.url, laptop.email, 'a brand new password');
    assert.equal((await tablet.signIn()).status, 200);

    assert.equal((await tablet.call('/auth/logout-everywhere', { method: 'POST' })).status, 204);
    assert.equal((await laptop.call('/me')).status, 401);
    assert.equal((await tablet.call('/agents')).status, 401);
  });

  it('resets a forgotten password through an emailed one-time link, ending every session', async () => {
    const p = new Person(api.url);
    await p.signUp();
    const asked = await new Person(api.url).call('/auth/password-reset', { json: { email: p.email } });
    assert.equal(asked.status, 202);
    const stranger = await new Person(api.url).call('/auth/password-reset', { json: { email: 'nobody@example.test' } });
    assert.deepEqual(stranger.body, asked.body, 'no hint whether the address has an account');
    const token = lastLinkTo(p.email, 'reset-password');
    const reset = await new Person(api.url).call('/auth/password-reset/confirm', {
      json: { token, password: 'reset password 123' },
    });
    assert.equal(reset.status, 204);
    assert.equal((await p.call('/me')).status, 401, 'the session that knew the old password ended');
    assert.equal((await new Person(api.url, p.email, 'reset password 123').signIn()).status, 200);
    const again = await new Person(api.url).call('/auth/password-reset/confirm', {
      json: { token, password: 'another one 12345' },
    });
    assert.deepEqual([again.status, again.body.code], [410, 'reset_link_invalid']);
  });

  it('asks for a TOTP code once two-factor is on, and takes each recovery code once', async () => {
    const p = new Person(api.url);
    await p.signUp();
    const started = await p.call('/me/two-factor', { method: 'POST' });
    assert.match(started.body.otpauth_url, /^otpauth:\/\/totp\/Cadre:/);
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(started.body.secret) });
    assert.equal((await p.call('/me/two-factor/confirm', { json: { code: '000000' } })).status, 422);
    const confirmed = await p.call('/me/two-factor/confirm', { json: { code: totp.generate() } });
    assert.equal(confirmed.body.recovery_codes.length, 10);

    const other = new Person(api.url, p.email, p.password);
    assert.equal((await other.signIn()).body.code, 'two_factor_required');
    assert.equal((await other.signIn({ totp_code: totp.generate() === '123456' ? '654321' : '123456' })).status, 401);
    assert.equal((await other.signIn({ totp_code: totp.generate() })).status, 200);
    const code = confirmed.body.recovery_codes[0];
    assert.equal((await new Person(api.url, p.email, p.password).signIn({ recovery_code: code })).status, 200);
    assert.equal((await new Person(api.url, p.email, p.password).signIn({ recovery_code: code })).status, 401);
    assert.equal((await p.call('/me')).body.user.two_factor, true);
  });

  it('invites by link and by email; the link works once, for the address it names', async () => {
    const owner = new Person(api.url);
    await owner.signUp();
    const made = await owner.call('/invitations', { json: { role: 'editor' } });
    assert.equal(made.status, 201);
    const token = made.body.url.split('/invite/')[1];
    const preview = await new Person(api.url).call(`/public/invitations/${token}`);
    assert.equal(preview.body.role, 'editor');

    const newcomer = new Person(api.url);
    const joined = await newcomer.call(`/public/invitations/${token}/accept`, {
      json: { email: newcomer.email, password: newcomer.password },
    });
    assert.equal(joined.status, 200);
    const me = await newcomer.call('/me');
    assert.equal(me.body.workspace.role, 'editor');
    // What the console shows an editor: agents to change and runs to start, but no members, keys or plan.
    assert.deepEqual(me.body.workspace.permissions, ['read', 'run', 'manage']);
    assert.equal(me.body.workspace.id, (await owner.call('/me')).body.workspace.id);
    const reused = await new Person(api.url).call(`/public/invitations/${token}/accept`, {
      json: { email: 'late@example.test', password: 'late comer password' },
    });
    assert.equal(reused.body.code, 'invitation_invalid');

    const emailed = await owner.call('/invitations', { json: { role: 'viewer', email: 'Named@Example.test' } });
    assert.equal(emailed.body.emailed, true);
    const named = lastLinkTo('named@example.test', 'invite');
    const wrongPerson = new Person(api.url);
    await wrongPerson.signUp();
    const refused = await wrongPerson.call(`/public/invitations/${named}/accept`, { json: {} });
    assert.equal(refused.body.code, 'invitation_for_someone_else');
    const revoked = await owner.call(`/invitations/${emailed.body.id}`, { method: 'DELETE' });
    assert.equal(revoked.status, 204);
    assert.equal((await new Person(api.url).call(`/public/invitations/${named}`)).status, 410);
  });

  it('keeps one owner: admins cannot grant or remove ownership, the last owner cannot step down', async () => {
    const owner = new Person(api.url);
    await owner.signUp();
    const ws = (await owner.call('/me')).body.workspace.id;
    const admin = await memberWithRole(h.stack.knex, api.url, ws, 'admin');
    const viewer = await memberWithRole(h.stack.knex, api.url, ws, 'viewer');
    const ids = Object.fromEntries(
      (await owner.call('/members')).body.data.map((m: { email: string; user_id: string }) => [m.email, m.user_id]),
    );

    assert.equal(
      (await admin.call(`/members/${ids[viewer.email]}`, { method: 'PATCH', json: { role: 'owner' } })).status,
      403,
    );
    assert.equal((await admin.call(`/members/${ids[owner.email]}`, { method: 'DELETE' })).status, 403);
    const promoted = await admin.call(`/members/${ids[viewer.email]}`, { method: 'PATCH', json: { role: 'operator' } });
    assert.equal(promoted.body.role, 'operator');
    const stepDown = await owner.call(`/members/${ids[owner.email]}`, { method: 'PATCH', json: { role: 'admin' } });
    assert.deepEqual([stepDown.status, stepDown.body.code], [409, 'last_owner']);
    assert.equal((await admin.call(`/members/${ids[viewer.email]}`, { method: 'DELETE' })).status, 204);
    assert.equal((await viewer.call('/agents')).body.code, 'no_workspace', 'removed at once');
  });

  it('allows each role exactly the routes its rank reaches, and each key scope its routes', async function () {
    this.timeout(120_000);
    const { workspace } = await createTestWorkspace(h, { plan: 'enterprise' });
    const people = Object.fromEntries(
      await Promise.all(
        roles.map(async (role) => [role, await memberWithRole(h.stack.knex, api.url, workspace.id, role)] as const),
      ),
    ) as Record<Role, Person>;
    const keys = {
      read: (await createApiKey(h.stack.knex, workspace.id, 'r', ['read'])).key,
      run: (await createApiKey(h.stack.knex, workspace.id, 'x', ['run'])).key,
      manage: (await createApiKey(h.stack.knex, workspace.id, 'm', ['manage'])).key,
    };
    // The design, written out rather than derived from the code under test.
    const designed: Record<Role, string[]> = {
      viewer: ['read'],
      operator: ['read', 'run'],
      editor: ['read', 'run', 'manage'],
      admin: ['read', 'run', 'manage', 'admin'],
      owner: ['read', 'run', 'manage', 'admin', 'owner'],
    };
    const keyScopes: Record<string, string[]> = { read: ['read'], run: ['run'], manage: ['read', 'manage', 'admin'] };
    const guarded = routes.filter((r) => r.scope !== 'public' && r.scope !== 'session');
    assert.ok(guarded.length > 60);
    const none = randomUUID();
    let checked = 0;
    for (const route of guarded) {
      const path = route.path.replace(/\{\w+\}/g, none);
      const method = route.method.toUpperCase();
      const json = method === 'GET' ? undefined : {};
      for (const role of roles) {
        const res = await people[role].call(path, { method, json });
        const denied = res.status === 403 && res.body.code === 'role_forbidden';
        assert.equal(
          denied,
          !designed[role].includes(route.scope),
          `${role} ${method} ${route.path} → ${res.status} ${res.body.code}`,
        );
        checked++;
      }
      for (const [scope, key] of Object.entries(keys)) {
        const res = await fetch(`${api.url}/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(json ? { 'content-type': 'application/json' } : {}) },
          body: json ? '{}' : undefined,
        });
        const type = res.headers.get('content-type') ?? '';
        const body = (type.includes('json') ? await res.json() : {}) as { code?: string };
        const denied = res.status === 403 && body.code === 'missing_scope';
        assert.equal(
          denied,
          !keyScopes[scope].includes(route.scope),
          `${scope} key ${method} ${route.path} → ${res.status}`,
        );
        checked++;
      }
    }
    assert.equal(checked, guarded.length * 8);
  });

  it("never shows a person another workspace's agents, runs, members, keys or audit entries", async () => {
    const a = new Person(api.url);
    await a.signUp();
    const b = await createTestWorkspace(h, { plan: 'enterprise' });
    const agent = await createLiveAgent(h, b.workspace.id, agentSpec);
    await memberWithRole(h.stack.knex, api.url, b.workspace.id, 'owner');
    assert.equal((await a.call(`/agents/${agent.id}`)).status, 404);
    assert.equal((await a.call(`/agents/${agent.id}/run`, { json: { input: 'x' } })).status, 404);
    assert.equal((await a.call('/agents')).body.data.length, 0);
    assert.equal((await a.call('/members')).body.data.length, 1);
    assert.equal((await a.call('/api-keys')).body.data.length, 0);
    const switchTo = await a.call('/me/workspace', { method: 'PUT', json: { workspace_id: b.workspace.id } });
    assert.equal(switchTo.status, 404, 'not a member there');
  });

  it("answers 404 on every route for another workspace's agent, run, approval, trigger, key, link, member and invitation", async function () {
    this.timeout(120_000);
    const a = new Person(api.url);
    await a.signUp();
    const b = await createTestWorkspace(h, { plan: 'enterprise' });
    const asB = async (path: string, json: unknown) => {
      const res = await fetch(`${api.url}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${b.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
      assert.ok(res.ok, `${path}: ${res.status}`);
      return (await res.json()) as { id: string };
    };
    const agent = await createLiveAgent(h, b.workspace.id, {
      name: 'Secret plans of B',
      nodes: [{ kind: 'input', id: 'in', next: null }],
      policy: { public_access: true },
    });
    const run = await startTestRun(h, b.workspace.id, agent.id, 'x');
    const approval = randomUUID();
    await h.stack.knex('approvals').insert({
      id: approval,
      workspace_id: b.workspace.id,
      run_id: run.id,
      item_seq: 0,
      node_id: 'in',
      workflow_id: 'w',
      tool: 'state.set',
      arguments: '{}',
    });
    const trigger = await asB(`/agents/${agent.id}/triggers`, { kind: 'webhook' });
    const link = await asB(`/agents/${agent.id}/run-links`, { name: 'B link' });
    const invitation = await asB('/invitations', { role: 'viewer' });
    const bOwner = await memberWithRole(h.stack.knex, api.url, b.workspace.id, 'owner');
    const bOwnerId = (await bOwner.call('/me')).body.user.id as string;
    const ids: Record<string, string> = {
      agents: agent.id,
      runs: run.id,
      approvals: approval,
      triggers: trigger.id,
      'api-keys': b.keyRecord.id,
      'run-links': link.id,
      invitations: invitation.id,
      members: bOwnerId,
      sources: randomUUID(),
      passages: randomUUID(),
    };
    // A refusal may repeat the id asked for, never anything else of B.
    const secrets = ['Secret plans of B', 'B link', b.workspace.id, bOwner.email];
    let checked = 0;
    for (const route of routes.filter((r) => r.scope !== 'public' && r.scope !== 'session' && r.path.includes('{'))) {
      const first = route.path.split('/')[1];
      const path = route.path
        .replace(/\{(id|userId)\}/, ids[first] ?? randomUUID())
        .replace('{key}', 'k')
        .replace('{version}', '1')
        .replace('{fileId}', randomUUID());
      const method = route.method.toUpperCase();
      const res = await a.call(path, { method, json: method === 'GET' ? undefined : {} });
      assert.ok([400, 404, 422].includes(res.status), `${method} ${route.path} answered ${res.status} for B's object`);
      const said = JSON.stringify(res.body);
      for (const secret of secrets) assert.ok(!said.includes(secret), `${method} ${route.path} told about B: ${said}`);
      checked++;
    }
    assert.ok(checked > 35);
    // Nothing of B changed.
    assert.equal((await h.stack.knex('agents').where({ id: agent.id }).first('state')).state, 'live');
    assert.equal((await h.stack.knex('api_keys').where({ id: b.keyRecord.id }).first('revoked_at')).revoked_at, null);
    assert.ok(await h.stack.knex('triggers').where({ id: trigger.id }).first('id'));
    assert.equal((await h.stack.knex('approvals').where({ id: approval }).first('status')).status, 'pending');
    assert.equal((await bOwner.call('/me')).body.workspace.role, 'owner');
  });

  it('the Free plan includes one workspace: 5 concurrent creates make exactly one', async () => {
    const p = new Person(api.url);
    await p.signUp();
    const first = (await p.call('/me')).body.workspace.id;
    await h.stack.knex('workspaces').where({ id: first }).update({ plan: 'professional' });
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => p.call('/workspaces', { json: { name: `second ${i}` } })),
    );
    assert.equal(answers.filter((a) => a.status === 201).length, 1);
    const refused = answers.filter((a) => a.status === 403);
    assert.equal(refused.length, 4);
    assert.equal(refused[0].body.code, 'plan_limit_workspaces');
    assert.equal((await p.call('/me')).body.workspaces.length, 2);
  });

  it('records security and configuration events with who and from where, readable by admins on paid plans', async () => {
    const owner = new Person(api.url);
    await owner.signUp();
    const free = await owner.call('/audit-log');
    assert.deepEqual([free.status, free.body.code], [403, 'plan_feature']);
    const ws = (await owner.call('/me')).body.workspace.id;
    await h.stack.knex('workspaces').where({ id: ws }).update({ plan: 'professional' });
    await owner.call('/api-keys', { json: { name: 'ci', scopes: ['read'] } });
    await owner.call('/invitations', { json: { role: 'viewer' } });
    const log = await owner.call('/audit-log');
    assert.equal(log.status, 200);
    const actions = log.body.data.map((e: { action: string }) => e.action);
    assert.deepEqual(actions.slice(0, 3), ['invitation.created', 'api_key.created', 'account.created']);
    const keyEvent = log.body.data[1];
    assert.equal(keyEvent.actor, owner.email);
    assert.equal(keyEvent.target, 'ci');
    assert.match(keyEvent.ip, /127\.0\.0\.1/);
    assert.ok(!JSON.stringify(log.body).includes('cadre_'), 'no key in the log');

    const other = new Person(api.url);
    await other.signUp();
    await h.stack
      .knex('workspaces')
      .where({ id: (await other.call('/me')).body.workspace.id })
      .update({ plan: 'professional' });
    const theirs = await other.call('/audit-log');
    assert.ok(theirs.body.data.every((e: { actor: string }) => e.actor !== owner.email));
  });

  it('creates an API key that ends on its own: refused with expired_api_key once its expiry has passed', async () => {
    const owner = new Person(api.url);
    await owner.signUp();
    const ws = (await owner.call('/me')).body.workspace.id;
    await h.stack.knex('workspaces').where({ id: ws }).update({ api_enabled: true });
    const past = await owner.call('/api-keys', {
      json: { name: 'late', scopes: ['read'], expires_at: new Date(Date.now() - 60_000).toISOString() },
    });
    assert.equal(past.status, 422);
    assert.match(past.body.detail, /future/);
    const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const made = await owner.call('/api-keys', { json: { name: 'trial', scopes: ['read'], expires_at: expiresAt } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.expires_at, expiresAt);
    const withKey = (key: string) => fetch(`${api.url}/v1/agents`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal((await withKey(made.body.key)).status, 200);
    const listed = (await owner.call('/api-keys')).body.data.find((k: { id: string }) => k.id === made.body.id);
    assert.equal(listed.expires_at, expiresAt);

    // Time passes (the row's expiry is moved instead of waiting a month).
    await h.stack
      .knex('api_keys')
      .where({ id: made.body.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const refused = await withKey(made.body.key);
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { code: string }).code, 'expired_api_key');
  });

  it("shows a member's sign-ins, failed sign-ins, password and two-factor changes in each of their workspaces' logs", async () => {
    const owner = new Person(api.url);
    await owner.signUp();
    const ws = (await owner.call('/me')).body.workspace.id;
    await h.stack.knex('workspaces').where({ id: ws }).update({ plan: 'professional' });
    const token = (await owner.call('/invitations', { json: { role: 'editor' } })).body.url.split('/invite/')[1];
    const member = new Person(api.url);
    await member.call(`/public/invitations/${token}/accept`, {
      json: { email: member.email, password: member.password },
    });

    assert.equal((await member.signIn({ password: 'not the password' })).status, 401);
    assert.equal((await member.signIn()).status, 200);
    const changed = await member.call('/me/password', {
      json: { current_password: member.password, new_password: 'another good password' },
    });
    assert.equal(changed.status, 204);
    const started = await member.call('/me/two-factor', { method: 'POST' });
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(started.body.secret) });
    assert.equal((await member.call('/me/two-factor/confirm', { json: { code: totp.generate() } })).status, 200);
    const off = await member.call('/me/two-factor', { method: 'DELETE', json: { password: 'another good password' } });
    assert.equal(off.status, 204);

    const log = await owner.call('/audit-log');
    const theirs = log.body.data
      .filter((e: { actor: string }) => e.actor === member.email)
      .map((e: { action: string }) => e.action)
      .reverse();
    assert.deepEqual(theirs, [
      'member.joined',
      'login.failed',
      'login.succeeded',
      'password.changed',
      'two_factor.enabled',
      'two_factor.disabled',
    ]);
    const failed = log.body.data.find((e: { action: string }) => e.action === 'login.failed');
    assert.match(failed.ip, /127\.0\.0\.1/);

    // A stranger's workspace shows none of it, and an address without an account is in no workspace's log.
    const stranger = new Person(api.url);
    await stranger.signUp();
    await h.stack
      .knex('workspaces')
      .where({ id: (await stranger.call('/me')).body.workspace.id })
      .update({ plan: 'professional' });
    await new Person(api.url).signIn();
    const strangers = (await stranger.call('/audit-log')).body.data.map((e: { actor: string }) => e.actor);
    assert.deepEqual([...new Set(strangers)], [stranger.email]);
  });
});

describe('Account deletion', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness();
  });
  after(async () => {
    await h?.close();
  });

  /** An account owning a workspace with an agent and an API key, and a member of someone else's workspace. */
  async function populatedAccount(url: string) {
    const p = new Person(url);
    await p.signUp({ workspace_name: 'Going away' });
    const own = (await p.call('/me')).body.workspace.id as string;
    const agent = await p.call('/agents', { json: { name: 'Mine', nodes: [{ kind: 'input', id: 'in', next: null }] } });
    const key = (await p.call('/api-keys', { json: { name: 'mine', scopes: ['read'] } })).body.key as string;
    await h.stack.knex('workspaces').where({ id: own }).update({ api_enabled: true });
    const shared = await createTestWorkspace(h);
    const user = (await p.call('/me')).body.user;
    await h.stack.knex('memberships').insert({ workspace_id: shared.workspace.id, user_id: user.id, role: 'editor' });
    return { p, own, agentId: agent.body.id as string, key, shared, userId: user.id as string };
  }

  const withKey = (url: string, key: string, path: string) =>
    fetch(`${url}/v1${path}`, { headers: { authorization: `Bearer ${key}` } });

  it('makes the account and its own workspace inaccessible at once, and recovery restores everything', async () => {
    const api = await startApi(h);
    try {
      const { p, agentId, key, shared } = await populatedAccount(api.url);
      assert.equal((await p.call('/me', { method: 'DELETE', json: { password: 'wrong password!' } })).status, 403);
      const deleted = await p.call('/me', { method: 'DELETE', json: { password: p.password } });
      assert.equal(deleted.status, 202);
      assert.equal(deleted.body.workspaces_deleted.length, 1, 'only the workspace it alone owns');

      assert.equal((await p.call('/me')).status, 401, 'signed out');
      const signIn = await new Person(api.url, p.email, p.password).signIn();
      assert.deepEqual([signIn.status, signIn.body.code], [403, 'account_deleted']);
      assert.equal(
        (await withKey(api.url, key, `/agents/${agentId}`)).status,
        401,
        "the workspace's keys open nothing",
      );
      const members = await withKey(api.url, shared.key, '/members');
      assert.ok(!JSON.stringify(await members.json()).includes(p.email), 'gone from shared workspaces');

      const back = new Person(api.url, p.email, p.password);
      const recovered = await back.call('/auth/recover', { json: { email: p.email, password: p.password } });
      assert.equal(recovered.status, 200);
      assert.equal((await back.call(`/agents/${agentId}`)).body.name, 'Mine');
      assert.equal((await withKey(api.url, key, `/agents/${agentId}`)).status, 200, 'the key works again');
      assert.equal((await back.call('/me')).body.workspaces.length, 2);
      const timer = await h.client.workflow
        .getHandle(`account-erasure-${(await back.call('/me')).body.user.id}`)
        .describe();
      assert.equal(timer.status.name, 'TERMINATED', 'the erasure timer is stopped');
    } finally {
      await api.close();
    }
  });

  it('erases every row of the account when the period ends, keeping shared workspaces without its address', async function () {
    this.timeout(60_000);
    const api = await startApi(h, { accountRecoverySeconds: 2 });
    try {
      const { p, own, shared, userId } = await populatedAccount(api.url);
      // The person leaves a trace in the shared workspace too.
      const sharedAgent = await createLiveAgent(h, shared.workspace.id, {
        name: 'Shared',
        nodes: [{ kind: 'input', id: 'in', next: null }],
      });
      await p.call('/me/workspace', { method: 'PUT', json: { workspace_id: shared.workspace.id } });
      assert.equal(
        (
          await p.call(`/agents/${sharedAgent.id}`, {
            method: 'PUT',
            json: { name: 'Shared', description: 'edited', nodes: [{ kind: 'input', id: 'in', next: null }] },
          })
        ).status,
        200,
      );
      // And creates one there: version 1 records them as its author.
      const theirs = await p.call('/agents', {
        json: { name: 'Theirs', nodes: [{ kind: 'input', id: 'in', next: null }] },
      });
      assert.equal(theirs.status, 201, JSON.stringify(theirs.body));
      assert.equal((await p.call(`/agents/${theirs.body.id}/versions`)).body.data[0].saved_by, p.email);

      const skill = await p.call('/skills', {
        method: 'POST',
        json: { name: 'house-style', content: 'Write amounts with two decimals.' },
      });
      assert.equal(skill.status, 201, JSON.stringify(skill.body));

      await p.call('/me', { method: 'DELETE', json: { password: p.password } });
      assert.equal(await h.client.workflow.getHandle(`account-erasure-${userId}`).result(), 'erased');

      const tables = await h.stack
        .knex('information_schema.tables')
        .where({ table_schema: 'public', table_type: 'BASE TABLE' })
        .whereNot('table_name', 'like', 'knex_%')
        .pluck('table_name');
      assert.ok(tables.length > 20);
      const found: string[] = [];
      for (const table of tables) {
        for (const needle of [userId, own, p.email]) {
          const { rows } = await h.stack.knex.raw(`select count(*)::int as n from ?? t where t::text like ?`, [
            table,
            `%${needle}%`,
          ]);
          if (rows[0].n > 0) found.push(`${table}: ${rows[0].n} row(s) with ${needle}`);
        }
      }
      assert.deepEqual(found, [], 'no row of the account is left');
      assert.equal(
        (await h.stack.knex('agents').where({ id: sharedAgent.id }).first('id'))?.id,
        sharedAgent.id,
        'the shared workspace keeps its agent',
      );
      assert.deepEqual(
        await h.stack.knex('agent_versions').where({ agent_id: theirs.body.id }).pluck('saved_by'),
        ['a deleted account'],
        'and the agent they created, without their address',
      );
      const recover = await new Person(api.url).call('/auth/recover', {
        json: { email: p.email, password: p.password },
      });
      assert.equal(recover.status, 401, 'nothing left to recover');
    } finally {
      await api.close();
    }
  });
});

describe('Plan changes', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  before(async () => {
    h = await createHarness();
    api = await startApi(h);
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  it('upgrades at once, downgrades at the end of the billing period, and only the owner decides', async () => {
    const owner = new Person(api.url);
    await owner.signUp();
    const ws = (await owner.call('/me')).body.workspace.id as string;
    const admin = await memberWithRole(h.stack.knex, api.url, ws, 'admin');
    assert.equal(
      (await admin.call('/workspace/plan', { method: 'PUT', json: { plan: 'enterprise' } })).body.code,
      'role_forbidden',
    );

    const up = await owner.call('/workspace/plan', { method: 'PUT', json: { plan: 'professional' } });
    assert.deepEqual(up.body, { plan: 'professional', pending_plan: null, plan_changes_at: null });
    assert.equal((await owner.call('/usage')).body.runs_per_month, 1000, 'the upgrade counts at once');
    // Professional has no agent limit: a fourth agent is allowed now.
    for (let i = 0; i < 4; i++) {
      const made = await owner.call('/agents', {
        json: { name: `A${i}`, nodes: [{ kind: 'input', id: 'in', next: null }] },
      });
      assert.equal(made.status, 201);
    }

    const down = await owner.call('/workspace/plan', { method: 'PUT', json: { plan: 'free' } });
    assert.equal(down.body.plan, 'professional', 'still professional until the period ends');
    assert.equal(down.body.pending_plan, 'free');
    const now = new Date();
    assert.equal(
      new Date(down.body.plan_changes_at).getTime(),
      Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1),
    );
    const timer = h.client.workflow.getHandle(`plan-change-${ws}`);
    assert.equal((await timer.describe()).status.name, 'RUNNING', 'a durable timer holds the downgrade');

    // Upgrading again withdraws the downgrade.
    await owner.call('/workspace/plan', { method: 'PUT', json: { plan: 'enterprise' } });
    assert.equal((await timer.describe()).status.name, 'TERMINATED', 'the timer is stopped');
    assert.deepEqual((await owner.call('/usage')).body.pending_plan, null);

    // When the period ends, the timer applies the downgrade (started here with a due time already past).
    await owner.call('/workspace/plan', { method: 'PUT', json: { plan: 'free' } });
    await h.client.workflow.getHandle(`plan-change-${ws}`).terminate();
    const applied = await h.client.workflow.execute('planChange', {
      workflowId: `plan-change-${ws}`,
      taskQueue: h.temporalConfig.taskQueue,
      args: [{ workspaceId: ws, plan: 'free', at: Date.now() - 1000 }],
    });
    assert.equal(applied, 'applied');
    const usage = (await owner.call('/usage')).body;
    assert.deepEqual([usage.plan, usage.runs_per_month, usage.pending_plan], ['free', 100, null]);
    const fourth = await owner.call('/agents', {
      json: { name: 'A4', nodes: [{ kind: 'input', id: 'in', next: null }] },
    });
    assert.equal(fourth.status, 403, 'the Free plan allows three agents');
  });
});
