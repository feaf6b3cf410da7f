// Every list of the API pages: `?limit=` caps a page, `next_cursor` leads to the next until it is null, and every
// row comes exactly once, in the list's order — sources, skills and connections by name, API keys and members
// oldest first, state entries by key, conversations and Inbox threads latest activity first — as /v1/agents does.
// A cursor the API did not hand out is a 400 invalid_cursor, never a 500.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { checkedFetch } from '../support/openapi-check';
import { memberWithRole } from '../support/people';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { createApiKey } from '../../db/api-keys';
import { createConnection } from '../../db/connections';
import { storeMessage } from '../../db/inbox';
import { loadSecretBox } from '../../db/secret-box';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- list rows are compared field by field
type Json = any;

describe('lists page with limit and cursor', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let agentId: string;

  const call = async (path: string, init: { method?: string; json?: unknown; body?: FormData } = {}) => {
    const res = await checkedFetch(`${api.url}/v1${path}`, {
      method: init.method ?? (init.json !== undefined || init.body ? 'POST' : 'GET'),
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as Json };
  };

  before(async () => {
    h = await createHarness({ worker: false });
    // Chat Mode begins conversations only with a model configured; none is asked anything here.
    const model = { ...h.config.model, apiKey: 'unused-key' };
    api = await startApi({ ...h, config: { ...h.config, model } }, { apiRateLimit: 0 });
    const t = await createTestWorkspace(h);
    key = t.key;
    const ws = t.workspace.id;
    const knex = h.stack.knex;
    const agent = await createLiveAgent(h, ws, { name: 'paged', nodes: [{ kind: 'input', id: 'in', next: null }] });
    agentId = agent.id;
    for (const name of ['charlie', 'alpha', 'bravo']) {
      const upload = new FormData();
      upload.append('name', `source ${name}`);
      upload.append('files', new Blob([`About ${name}.`], { type: 'text/plain' }), `${name}.txt`);
      assert.equal((await call('/sources', { body: upload })).status, 202);
      assert.equal((await call('/skills', { json: { name: `skill ${name}`, content: `Be ${name}.` } })).status, 201);
      await createConnection(knex, {
        workspace_id: ws,
        name: `db_${name}`,
        kind: 'postgres',
        config: {
          host: '127.0.0.1',
          database: 'x',
          user: 'x',
          ssl: false,
          allow_writes: false,
          row_limit: 1000,
          statement_timeout_ms: 10_000,
        },
        credentials_sealed: loadSecretBox(h.config).seal(JSON.stringify({ password: '' })),
        created_by: 'test',
      });
      const put = await call(`/agents/${agent.id}/state-store/key-${name}`, { method: 'PUT', json: { value: name } });
      assert.equal(put.status, 200);
      assert.equal((await call('/chat/conversations', { json: { title: `about ${name}` } })).status, 201);
      await storeMessage(knex, ws, undefined, {
        agent_id: agent.id,
        direction: 'inbound',
        message_id: `<${randomUUID()}@example.test>`,
        in_reply_to: null,
        references: [],
        from_address: 'sam@example.test',
        to_addresses: ['agent@inbox.test'],
        subject: `thread ${name}`,
        text: 'Hello',
        attachments: [],
        authentication_results: null,
        received_spf: null,
      });
      await createApiKey(knex, ws, `key ${name}`, ['read']);
      await memberWithRole(knex, api.url, ws, 'viewer');
    }
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  /** All pages of a list at `limit` a page, and the one answer without a limit. */
  async function walk(path: string, limit: number) {
    const pages: Json[] = [];
    let cursor: string | null = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const page: Json = await call(
        `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(page.status, 200, `${path}: ${JSON.stringify(page.body)}`);
      assert.ok(page.body.data.length <= limit, `${path}: a page holds at most ${limit}`);
      pages.push(page.body);
      cursor = page.body.next_cursor;
      assert.ok(pages.length < 20, `${path}: the cursor keeps going`);
    } while (cursor);
    return pages;
  }

  const lists: [path: string, id: (row: Json) => string, count: number][] = [
    ['/sources', (s) => s.name, 3],
    ['/skills', (s) => s.name, 3],
    ['/connections', (c) => c.name, 3],
    ['/api-keys', (k) => k.id, 4],
    ['/members', (m) => m.user_id, 3],
    ['/chat/conversations', (c) => c.id, 3],
  ];

  it('answers every row once, in the order of the whole list, a page of `limit` at a time', async () => {
    for (const [path, id, count] of [
      ...lists,
      [`/agents/${agentId}/state-store`, (e: Json) => e.key, 3] as const,
      [`/agents/${agentId}/inbox`, (t: Json) => t.id, 3] as const,
    ]) {
      const whole = await call(path);
      assert.equal(whole.status, 200);
      assert.equal(whole.body.next_cursor, null, `${path}: one page by default`);
      assert.equal(whole.body.data.length, count, path);
      for (const limit of [1, 2]) {
        const pages = await walk(path, limit);
        const seen = pages.flatMap((p) => p.data.map(id));
        assert.deepEqual(seen, whole.body.data.map(id), `${path} at ${limit} a page`);
        assert.equal(pages.length, Math.ceil(count / limit), `${path} at ${limit} a page`);
      }
    }
    // The orders the console shows: by name, by key, latest activity first.
    const names = (await call('/sources')).body.data.map((s: Json) => s.name);
    assert.deepEqual(names, ['source alpha', 'source bravo', 'source charlie']);
    const keys = (await call(`/agents/${agentId}/state-store`)).body.data.map((e: Json) => e.key);
    assert.deepEqual(keys, ['key-alpha', 'key-bravo', 'key-charlie']);
    const titles = (await call('/chat/conversations')).body.data.map((c: Json) => c.title);
    assert.deepEqual(titles, ['about bravo', 'about alpha', 'about charlie']);
    // What a list answers besides its rows stays on every page.
    const skills = await call('/skills?limit=1');
    assert.ok(Array.isArray(skills.body.platform) && skills.body.platform.length > 0);
    assert.match((await call(`/agents/${agentId}/inbox?limit=1`)).body.address, /@/);
  });

  it('refuses a limit out of range and a cursor it did not hand out with 400, never a 500', async () => {
    const cursor = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
    const someId = '00000000-0000-4000-8000-000000000000';
    // Not a cursor of any list; then ones a list by time refuses (no such time), by name (no id) or by key (two).
    const forged = ['x', cursor([]), cursor(['\u0000', someId]), cursor(['2026-01-01 00:00:00+00', 'not-a-uuid'])];
    const byTime = [cursor(['2026-13-45 99:99:99+99', someId]), cursor(['0000-01-01 00:00:00+00', someId])];
    const byName = [cursor(['x'])];
    const byTimeLists = ['/api-keys', '/members', '/chat/conversations', `/agents/${agentId}/inbox`];
    for (const path of [...lists.map(([p]) => p), `/agents/${agentId}/state-store`, `/agents/${agentId}/inbox`]) {
      for (const limit of ['0', '501', 'ten', '']) {
        const res = await call(`${path}?limit=${limit}`);
        assert.equal(res.status, 400, `${path}?limit=${limit}`);
        assert.equal(res.body.code, 'invalid_limit');
      }
      const refused = [
        ...forged,
        ...(byTimeLists.includes(path) ? byTime : []),
        ...(path.endsWith('state-store') ? [] : byName), // a state store's cursor is the last key: any key is one
      ];
      for (const cursor of refused) {
        const res = await call(`${path}?cursor=${cursor}`);
        assert.equal(res.status, 400, `${path}?cursor=${cursor}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.code, 'invalid_cursor');
      }
    }
  });
});
