// The operator CLI (`npx cadre …`) against the test stack's database, as an operator would run it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { verifyApiKey } from '../../db/api-keys';
import { testStack, type TestStack } from '../support/global';
import { createHarness, createLiveAgent, createTestWorkspace, startApi } from '../support/harness';
import { createTrigger } from '../../services/triggers/manage';
import { scheduleIdOf } from '../../schedules/sync';
import { secretBox } from '../../db/secret-box';
import { createUser } from '../../db/accounts';
import { tokenHash } from '../../db/tokens';
import { triggerInputSchema } from '../../model/trigger';

const root = path.resolve(__dirname, '../..');

describe('operator CLI', () => {
  let stack: TestStack;
  before(async () => {
    stack = await testStack();
  });

  const cadre = (...args: string[]) => cadreWith({}, ...args);
  /** For commands that call an API served by this very process: spawnSync would block it from answering. */
  const cadreAsync = (env: Record<string, string>, ...args: string[]) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, ['scripts/cadre.cjs', ...args], {
        cwd: root,
        env: { ...stack.env, ...env },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (c) => (out += c));
      child.stderr.on('data', (c) => (err += c));
      child.on('close', (code) => resolve({ code, out: out.trim(), err: err.trim() }));
    });
  const cadreWith = (env: Record<string, string>, ...args: string[]) => {
    const r = spawnSync(process.execPath, ['scripts/cadre.cjs', ...args], {
      cwd: root,
      env: { ...stack.env, ...env },
      encoding: 'utf8',
    });
    return { code: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
  };

  it('creates a workspace, enables its API, makes a key and imports an agent, printing only what was asked for', async () => {
    const ws = cadre('workspace', 'create', '--name', 'Acme', '--plan', 'professional');
    assert.equal(ws.code, 0, ws.err);
    assert.match(ws.out, /^[0-9a-f-]{36}$/);
    const row = await stack.knex('workspaces').where({ id: ws.out }).first();
    assert.deepEqual([row.name, row.plan, row.api_enabled], ['Acme', 'professional', false]);

    assert.equal(cadre('workspace', 'enable-api', ws.out).code, 0);
    assert.equal((await stack.knex('workspaces').where({ id: ws.out }).first()).api_enabled, true);

    const key = cadre('apikey', 'create', '--workspace', ws.out, '--scopes', 'run,read');
    assert.equal(key.code, 0, key.err);
    assert.match(key.out, /^cadre_[a-z0-9]{12}_[\w-]{32}$/);
    const check = await verifyApiKey(stack.knex, key.out);
    assert.ok(check.ok);
    assert.deepEqual(check.ok && check.key.scopes, ['run', 'read']);

    const agent = cadre('agent', 'import', 'examples/route-csv-rows.json', '--workspace', ws.out);
    assert.equal(agent.code, 0, agent.err);
    assert.match(agent.out, /^[0-9a-f-]{36}$/);
    assert.equal(cadre('agent', 'set-state', agent.out, 'live').code, 0);
    const imported = await stack.knex('agents').where({ id: agent.out }).first();
    assert.deepEqual([imported.name, imported.state, imported.workspace_id], ['Route invoice rows', 'live', ws.out]);

    assert.equal(cadre('migrate').out, 'the schema is up to date');
  });

  it('prints invitation and password reset links, and re-wraps every stored secret after a key rotation', async () => {
    const ws = cadre('workspace', 'create', '--name', 'Invites');
    const invite = cadre('workspace', 'invite', ws.out, '--role', 'admin', '--email', 'Ops@Example.test');
    assert.equal(invite.code, 0, invite.err);
    const token = /\/invite\/([\w-]{43})$/.exec(invite.out)?.[1];
    assert.ok(token, invite.out);
    const row = await stack
      .knex('invitations')
      .where({ token_hash: tokenHash(token) })
      .first();
    assert.deepEqual([row.workspace_id, row.role, row.email], [ws.out, 'admin', 'ops@example.test']);
    assert.match(cadre('workspace', 'invite', ws.out, '--role', 'boss').err, /--role must be one of/);

    const user = await createUser(stack.knex, {
      email: `reset-${Date.now()}@example.test`,
      password: 'a long password',
    });
    const reset = cadre('user', 'reset-link', user.email);
    assert.equal(reset.code, 0, reset.err);
    const resetToken = /\/reset-password\/([\w-]{43})$/.exec(reset.out)?.[1];
    assert.ok(
      resetToken &&
        (await stack
          .knex('password_resets')
          .where({ token_hash: tokenHash(resetToken) })
          .first()),
    );
    assert.match(cadre('user', 'reset-link', 'nobody@example.test').err, /no account with the email/);

    // A secret sealed under the old key; the operator rotates to a new key and re-wraps.
    const sealed = secretBox('the old key').seal('JBSWY3DPEHPK3PXP');
    await stack.knex('users').where({ id: user.id }).update({ totp_secret: sealed });
    const rotated = { CADRE_SECRET_KEY: 'the new key', CADRE_SECRET_KEY_PREVIOUS: 'the old key' };
    const rewrap = cadreWith(rotated, 'secrets', 'rewrap');
    assert.equal(rewrap.code, 0, rewrap.err);
    assert.match(rewrap.out, /^[1-9]\d* secret\(s\) re-wrapped/);
    const now = (await stack.knex('users').where({ id: user.id }).first('totp_secret')).totp_secret;
    assert.equal(secretBox('the new key').open(now), 'JBSWY3DPEHPK3PXP', 'opens with the new key alone');
    assert.match(cadreWith(rotated, 'secrets', 'rewrap').out, /^0 secret/, 'a second pass has nothing to do');
  });

  it('starts a run and reads it through the API with the typed client, as an integrator would', async () => {
    const h = await createHarness({ worker: false });
    const api = await startApi(h);
    try {
      const { workspace, key } = await createTestWorkspace(h);
      const agent = await createLiveAgent(h, workspace.id, {
        name: 'lines',
        nodes: [{ kind: 'input', id: 'in', format: 'lines', next: null }],
      });
      const env = { CADRE_API_KEY: key };
      const started = await cadreAsync(env, 'run', 'start', agent.id, '--input', 'one\ntwo', '--url', api.url);
      assert.equal(started.code, 0, started.err);
      assert.match(started.out, /^[0-9a-f-]{36}$/);
      const run = JSON.parse((await cadreAsync(env, 'run', 'get', started.out, '--url', api.url)).out);
      assert.deepEqual([run.id, run.agent_id, run.trigger, run.input], [started.out, agent.id, 'api', 'one\ntwo']);
      const refused = await cadreAsync({ CADRE_API_KEY: 'cadre_nope' }, 'run', 'get', started.out, '--url', api.url);
      assert.equal(refused.code, 1);
      assert.match(refused.err, /the API answered 401: that is not a Cadre API key/);
      assert.match((await cadreAsync({}, 'run', 'start', agent.id, '--url', api.url)).err, /CADRE_API_KEY|--input/);
    } finally {
      await api.close();
      await h.close();
    }
  });

  it("pauses and resumes the agent's schedules with set-state", async () => {
    const h = await createHarness({ worker: false });
    try {
      const { workspace } = await createTestWorkspace(h);
      const agent = await createLiveAgent(h, workspace.id, {
        name: 'nightly',
        nodes: [{ kind: 'input', id: 'in', next: null }],
      });
      const { trigger } = await createTrigger(
        {
          knex: stack.knex,
          temporal: h.client,
          temporalConfig: h.temporalConfig,
          secrets: secretBox('cli test'),
          links: { publicUrl: 'http://cadre.test', temporal: h.temporalConfig },
        },
        agent,
        triggerInputSchema.parse({ kind: 'schedule', schedule: { type: 'daily', at: '02:00' } }),
      );
      const schedule = h.client.schedule.getHandle(scheduleIdOf(trigger));
      assert.equal((await schedule.describe()).state.paused, false);
      const paused = cadre('agent', 'set-state', agent.id, 'paused');
      assert.equal(paused.code, 0, paused.err);
      assert.equal((await schedule.describe()).state.paused, true);
      assert.equal(cadre('agent', 'set-state', agent.id, 'live').code, 0);
      assert.equal((await schedule.describe()).state.paused, false);
      await schedule.delete();
    } finally {
      await h.close();
    }
  });

  it("makes a key that expires with --expires, held to the API's rule: a date-time with its offset, still to come", async () => {
    const ws = cadre('workspace', 'create', '--name', 'Expiring').out;
    const at = '2099-01-31T09:00:00+01:00';
    const key = cadre(
      'apikey',
      'create',
      '--workspace',
      ws,
      '--scopes',
      'read',
      '--name',
      'quarterly',
      '--expires',
      at,
    );
    assert.equal(key.code, 0, key.err);
    assert.match(key.out, /^cadre_[a-z0-9]{12}_[\w-]{32}$/, 'prints only the key');
    const check = await verifyApiKey(stack.knex, key.out);
    assert.ok(check.ok);
    assert.equal(new Date(check.ok ? check.key.expires_at! : 0).toISOString(), '2099-01-31T08:00:00.000Z');

    const keys = () => stack.knex('api_keys').where({ workspace_id: ws }).count<{ n: string }[]>('* as n');
    const before = Number((await keys())[0].n);
    for (const [expires, message] of [
      ['2020-01-31T00:00:00Z', /^cadre: --expires must be in the future$/],
      ['next week', /^cadre: --expires takes an ISO 8601 date-time with its offset, such as 2027-01-31T00:00:00Z$/],
      ['2099-01-31', /--expires takes an ISO 8601 date-time with its offset/],
    ] as const) {
      const r = cadre('apikey', 'create', '--workspace', ws, '--scopes', 'read', '--expires', expires);
      assert.equal(r.code, 1, `${expires}: ${r.out}`);
      assert.match(r.err.split('\n')[0], message);
    }
    assert.equal(Number((await keys())[0].n), before, 'a refused --expires makes no key');
  });

  it('fails with exit code 1 and one line that says what is wrong', () => {
    for (const [args, message] of [
      [['apikey', 'create', '--workspace', '00000000-0000-0000-0000-000000000000', '--scopes', 'run'], /no workspace/],
      [['apikey', 'create', '--scopes', 'fly'], /--scopes takes a comma-separated list of run, read, manage/],
      [['agent', 'import', 'no-such-file.json', '--workspace', 'x'], /cannot read no-such-file\.json/],
      [['agent', 'set-state', 'x', 'sleeping'], /live\|paused/],
      [['frobnicate'], /unknown command "frobnicate"/],
    ] as const) {
      const r = cadre(...args);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.out}`);
      assert.match(r.err.split('\n')[0], message);
      assert.ok(!/^\s+at /m.test(r.err), 'no stack trace');
    }
  });

  it('refuses an invalid agent file with the reason', () => {
    const ws = cadre('workspace', 'create').out;
    const r = cadre('agent', 'import', 'package.json', '--workspace', ws);
    assert.equal(r.code, 1);
    assert.match(r.err, /^cadre: package\.json is not a valid agent: /);
  });
});
