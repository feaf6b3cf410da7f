// Odd input over real HTTP never gives a 5xx: a malformed cookie, U+0000 in any text, JSON nested without end,
// an integer the column cannot hold, a session-only route called with a key, an enormous header. Each is refused
// with a problem+json that says what to change.
import assert from 'node:assert/strict';
import http, { type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../api/app';
import { apiAdapters } from '../../scripts/api-adapters';
import { createLogger } from '../../api/logger';
import { secretBox } from '../../db/secret-box';
import { signWebhook } from '../../services/triggers/webhook-signature';
import { consoleHandler } from '../support/console-build';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { Person } from '../support/people';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
type Json = any;

const agentSpec = { name: 'Odd', nodes: [{ kind: 'input', id: 'in', next: null }] };
const badCookie = 'cadre_session=%E0%A4%A';

describe('Odd input gets a 4xx problem, never a 5xx', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let agentId: string;

  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    agentId = (await createLiveAgent(h, t.workspace.id, agentSpec)).id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  /** A call with the workspace's key (unless `key: null`), the body sent as given when it is a string. */
  async function call(
    method: string,
    path: string,
    init: { json?: unknown; headers?: Record<string, string>; key?: string | null } = {},
  ) {
    const headers = new Headers(init.headers);
    const k = init.key === undefined ? key : init.key;
    if (k) headers.set('authorization', `Bearer ${k}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
    const res = await fetch(`${api.url}/v1${path}`, {
      method,
      headers,
      body: typeof init.json === 'string' ? init.json : init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      body: (res.headers.get('content-type') ?? '').includes('json') ? (JSON.parse(text) as Json) : text,
    };
  }

  /** The answer is a problem+json of that status; its detail matches `detail` when given. */
  function problem(res: Awaited<ReturnType<typeof call>>, status: number, detail?: RegExp) {
    assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
    assert.match(res.type, /^application\/problem\+json/);
    assert.equal(res.body.status, status);
    if (detail) assert.match(res.body.detail, detail);
  }

  it('counts a malformed session cookie as no cookie: 401, on every kind of cookie route', async () => {
    const headers = { cookie: badCookie };
    problem(await call('GET', '/me', { headers, key: null }), 401);
    problem(await call('GET', '/agents', { headers, key: null }), 401);
    problem(await call('POST', '/auth/logout', { headers, key: null }), 401);
    // Routes that only look whether a cookie is there: signing in works, as it would without one.
    const p = new Person(api.url);
    await p.signUp();
    const signIn = await call('POST', '/auth/login', {
      headers,
      key: null,
      json: { email: p.email, password: p.password },
    });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
  });

  // Every text field that reaches PostgreSQL: one rule, so one 422 naming the field wherever it is.
  const nul = 'a\u0000b';
  const nulFields: [what: string, method: string, path: () => string, body: unknown, field: RegExp][] = [
    ['an agent name', 'POST', () => '/agents', { ...agentSpec, name: nul }, /\bname\b/],
    [
      'a node field of an agent',
      'POST',
      () => '/agents',
      { ...agentSpec, nodes: [{ ...agentSpec.nodes[0], id: nul }] },
      /nodes\.0\.id/,
    ],
    ['a trigger name', 'POST', () => `/agents/${agentId}/triggers`, { kind: 'webhook', name: nul }, /\bname\b/],
    ['an API key name', 'POST', () => '/api-keys', { name: nul, scopes: ['read'] }, /\bname\b/],
    ['a source name', 'POST', () => '/sources', { url: 'https://example.com/x', name: nul }, /\bname\b/],
    ['a skill name', 'POST', () => '/skills', { name: nul, content: 'Be brief.' }, /\bname\b/],
    ['a skill description', 'POST', () => '/skills', { name: 'brief', description: nul, content: 'x' }, /description/],
    ['a run-link name', 'POST', () => `/agents/${agentId}/run-links`, { name: nul }, /\bname\b/],
    ['a wizard goal', 'POST', () => '/wizard/sessions', { goal: nul }, /\bgoal\b/],
    ['a chat title', 'POST', () => '/chat/conversations', { title: nul }, /\btitle\b/],
    [
      'a state-store value',
      'PUT',
      () => `/agents/${agentId}/state-store/k`,
      { value: { list: [nul] } },
      /value\.list\.0/,
    ],
    [
      "a state-store value's object key",
      'PUT',
      () => `/agents/${agentId}/state-store/k`,
      { value: { [nul]: 1 } },
      /value/,
    ],
    ['an object key anywhere', 'POST', () => '/agents', { ...agentSpec, [nul]: 1 }, /U\+0000/],
    [
      'a state-store key (a path parameter)',
      'PUT',
      () => `/agents/${agentId}/state-store/a%00b`,
      { value: 1 },
      /\bkey\b/,
    ],
    ['a query parameter', 'GET', () => '/audit-log?action=a%00b', undefined, /\baction\b/],
  ];
  for (const [what, method, path, body, field] of nulFields) {
    it(`refuses U+0000 in ${what} with a 422 naming it`, async () => {
      const res = await call(method, path(), { json: body });
      problem(res, 422, field);
      assert.match(res.body.detail, /U\+0000/);
    });
  }

  it('refuses a path parameter that is not percent-encoded UTF-8 with a 422', async () => {
    problem(await call('GET', '/agents/%E0%A4%A'), 422, /%E0%A4%A/);
    problem(await call('DELETE', `/agents/${agentId}/state-store/%E0%A4%A`), 422, /%E0%A4%A/);
  });

  it('refuses U+0000 in a multipart field and a file name with a 422 naming it', async () => {
    const upload = async (body: FormData | string) => {
      const res = await fetch(`${api.url}/v1/sources`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          ...(typeof body === 'string' ? { 'content-type': 'multipart/form-data; boundary=b' } : {}),
        },
        body,
      });
      return { status: res.status, type: res.headers.get('content-type') ?? '', body: (await res.json()) as Json };
    };
    const named = new FormData();
    named.set('name', nul);
    named.set('file', new Blob(['hello']), 'notes.txt');
    problem(await upload(named), 422, /\bname\b/);
    // A file name can carry U+0000 percent-encoded (RFC 5987), where a raw one is a malformed part header.
    const file = [
      '--b',
      `Content-Disposition: form-data; name="file"; filename*=utf-8''no%00tes.txt`,
      'Content-Type: text/plain',
      '',
      'hello',
      '--b--',
      '',
    ].join('\r\n');
    problem(await upload(file), 422, /file\.filename/);
  });

  it('refuses U+0000 in a webhook delivery, whose raw body no JSON parser of the API reads', async () => {
    const hook = await call('POST', `/agents/${agentId}/triggers`, { json: { kind: 'webhook' } });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    const body = JSON.stringify({ note: nul });
    const id = `msg_${randomUUID()}`;
    const ts = Math.floor(Date.now() / 1000);
    const res = await call('POST', `/hooks/${hook.body.id}`, {
      key: null,
      json: body,
      headers: {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': signWebhook(hook.body.secret, id, ts, body),
      },
    });
    problem(res, 422, /\bnote\b/);
  });

  it('refuses JSON nested beyond the depth limit with a 422, and keeps taking ordinary nesting', async () => {
    const deep = '{"value":' + '['.repeat(5000) + ']'.repeat(5000) + '}';
    problem(await call('PUT', `/agents/${agentId}/state-store/deep`, { json: deep }), 422, /deeper than 64/);
    const fine = '{"value":' + '['.repeat(30) + ']'.repeat(30) + '}';
    assert.equal((await call('PUT', `/agents/${agentId}/state-store/deep`, { json: fine })).status, 200);
  });

  it('bounds expected_version by what the version column can hold', async () => {
    const path = `/agents/${agentId}/state-store/bounded`;
    problem(await call('PUT', path, { json: { value: 1, expected_version: 2147483647 } }), 422, /expected_version/);
    problem(await call('PUT', path, { json: { value: 1, expected_version: 1e20 } }), 422, /expected_version/);
    assert.equal((await call('PUT', path, { json: { value: 1, expected_version: 2147483646 } })).status, 409);
  });

  it('answers session-only routes called with an API key: they need a signed-in person', async () => {
    for (const [method, path, json] of [
      ['POST', '/auth/logout-everywhere', undefined],
      ['POST', '/me/password', { current_password: 'correct horse battery', new_password: 'another long one' }],
      ['POST', '/me/two-factor', undefined],
      ['POST', '/me/two-factor/confirm', { code: '123456' }],
    ] as const) {
      const res = await call(method, path, { json });
      problem(res, 401, /needs a signed-in session/);
      assert.equal(res.body.code, 'session_required');
    }
  });

  it('refuses an Idempotency-Key longer than a key can be (422) and an oversized header (431), both as problems', async () => {
    const run = (idempotencyKey: string) =>
      call('POST', `/agents/${agentId}/run`, { json: { input: 'x' }, headers: { 'idempotency-key': idempotencyKey } });
    problem(await run('k'.repeat(256)), 422, /Idempotency-Key/);
    // Past the server's header limit the request never reaches the app: still a problem, not a bare status.
    problem(await run('k'.repeat(100_000)), 431, /header/);
  });

  describe('the console', () => {
    let server: Server;
    let base: string;
    before(async function () {
      this.timeout(600_000); // the first browser-free console suite of a process builds it
      // As scripts/web.ts does: one server for the API and the console, which reads through the API.
      server = await new Promise<Server>((resolve) => {
        const s = http.createServer();
        s.listen(0, '127.0.0.1', () => resolve(s));
      });
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      delete process.env.CADRE_CONSOLE_API_KEY; // people sign in: no console key
      server.on(
        'request',
        createApp({
          adapters: apiAdapters(),
          knex: h.stack.knex,
          temporal: h.client,
          temporalConfig: h.temporalConfig,
          links: { publicUrl: base, temporal: h.temporalConfig },
          bodyLimit: '1mb',
          budgetScope: `${randomUUID()}:`,
          secrets: secretBox('odd input'),
          logger: createLogger('silent', 'web'),
          versions: { temporal: 'test', postgres: 'test' },
          ready: async () => ({ temporal: true, postgres: true }),
          console: await consoleHandler(base),
        }),
      );
    });
    after(async () => {
      server?.closeAllConnections();
      await new Promise((r) => server?.close(r));
    });

    it('shows the sign-in page to a browser with a malformed session cookie', async () => {
      const res = await fetch(`${base}/`, { headers: { cookie: badCookie } });
      assert.equal(res.status, 200, await res.clone().text());
      assert.match(new URL(res.url).pathname, /^\/login/);
      assert.match(await res.text(), /password/i);
    });
  });
});
