// The documented run endpoint and the API around it, over real HTTP against the real engine.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createApiKey, revokeApiKey } from '../../db/api-keys';
import { checkedFetch } from '../support/openapi-check';
import { currentMonth, setApiEnabled, setPlan } from '../../db/workspaces';
import { planLimits } from '../../model/plan';
import { updateAgent } from '../../db/agents';
import { agentSpecSchema } from '../../model/agent';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = any;
const json = (res: Response): Promise<Json> => res.json();

const csvAgent = {
  name: 'csv',
  nodes: [
    { kind: 'input', id: 'rows', format: 'csv', next: 'out' },
    { kind: 'output', id: 'out', format: 'csv', file_name: 'rows.csv' },
  ],
};

describe('API v1', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let ws: string;
  let agentId: string;

  before(async () => {
    h = await createHarness();
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
    agentId = (await createLiveAgent(h, ws, csvAgent)).id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const call = (path: string, init: RequestInit & { key?: string | null; json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    const k = init.key === undefined ? key : init.key;
    if (k) headers.set('authorization', `Bearer ${k}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return checkedFetch(`${api.url}${path}`, { ...init, headers, body });
  };
  const run = (agent: string, json: unknown, init: Parameters<typeof call>[1] = {}) =>
    call(`/v1/agents/${agent}/run`, { method: 'POST', json, ...init });

  async function problem(res: Response, status: number, code: string) {
    assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${await res.clone().text()}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const body = await json(res);
    assert.equal(body.status, status);
    assert.equal(body.code, code);
    assert.equal(typeof body.title, 'string');
    assert.ok(body.detail.length > 10, 'the detail says what to do');
    return body;
  }

  describe('POST /v1/agents/{agent_id}/run', () => {
    it('starts one run: 202, Location, the run with its links', async () => {
      const res = await run(agentId, { input: 'a,b\n1,2\n3,4' });
      assert.equal(res.status, 202);
      const body = await json(res);
      assert.equal(res.headers.get('location'), `/v1/runs/${body.id}`);
      assert.ok(res.headers.get('x-request-id'));
      assert.equal(body.agent_id, agentId);
      assert.equal(body.agent_version, 1);
      assert.equal(body.trigger, 'api');
      assert.equal(body.status, 'running');
      assert.equal(body.links.self, `http://cadre.test/v1/runs/${body.id}`);
      assert.equal(body.links.console, `http://cadre.test/runs/${body.id}`);
      assert.match(body.links.temporal, new RegExp(`/namespaces/default/workflows/run-${body.id}$`));
      const done = await waitForRun(h, body.id);
      assert.equal(done.status, 'completed');
      assert.equal(done.total, 2);

      const details = await json(await call(`/v1/runs/${body.id}`));
      assert.equal(details.status, 'completed');
      assert.deepEqual(details.counts, { total: 2, pending: 0, done: 2, failed: 0, needs_review: 0, skipped: 0 });
      assert.deepEqual(details.outputs[0].data, [
        { a: '1', b: '2' },
        { a: '3', b: '4' },
      ]);
      const file = await call(`/v1/runs/${body.id}/files/${details.files[0].id}`);
      assert.equal(file.status, 200);
      assert.match(file.headers.get('content-disposition') ?? '', /attachment; filename="?rows\.csv"?/);
      assert.equal(await file.text(), 'a,b\n1,2\n3,4\n');
    });

    it('401 without a key, with a malformed header, an unknown key or a revoked key, with WWW-Authenticate', async () => {
      for (const [init, code] of [
        [{ key: null }, 'missing_api_key'],
        [{ key: null, headers: { authorization: 'Basic abc' } }, 'malformed_authorization'],
        [{ key: 'not-a-key' }, 'malformed_api_key'],
        [{ key: 'cadre_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' }, 'unknown_api_key'],
      ] as const) {
        const res = await run(agentId, { input: 'a\n1' }, init);
        await problem(res, 401, code);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      }
      const other = await createTestWorkspace(h);
      await revokeApiKey(h.stack.knex, other.workspace.id, other.keyRecord.id);
      await problem(await run(agentId, { input: 'a\n1' }, { key: other.key }), 401, 'revoked_api_key');
    });

    // A start takes the key as verified a moment ago and checks it again in the statement that opens the run: a change
    // made elsewhere (another web process, the CLI) must still count on the very next start.
    it('sees at once a key revoked, API access closed or a plan changed after the key started runs', async () => {
      const runsOf = async (agent: string) => (await h.stack.knex('runs').where({ agent_id: agent })).length;
      const revoked = await createTestWorkspace(h);
      const agentR = (await createLiveAgent(h, revoked.workspace.id, csvAgent)).id;
      const replayed = { key: revoked.key, headers: { 'idempotency-key': 'same-start' } };
      assert.equal((await run(agentR, { input: 'a\n1' }, { key: revoked.key })).status, 202);
      assert.equal((await run(agentR, { input: 'a\n2' }, replayed)).status, 202);
      await revokeApiKey(h.stack.knex, revoked.workspace.id, revoked.keyRecord.id);
      // Not even a replay answers a revoked key.
      await problem(await run(agentR, { input: 'a\n2' }, replayed), 401, 'revoked_api_key');
      await problem(await run(agentR, { input: 'a\n1' }, { key: revoked.key }), 401, 'revoked_api_key');
      assert.equal(await runsOf(agentR), 2);

      const closed = await createTestWorkspace(h);
      const agentC = (await createLiveAgent(h, closed.workspace.id, csvAgent)).id;
      assert.equal((await run(agentC, { input: 'a\n1' }, { key: closed.key })).status, 202);
      await setApiEnabled(h.stack.knex, closed.workspace.id, false);
      // Refused before the run would open, the key hears why it is refused, not what it asked about.
      await problem(await run('no-such-agent', { input: 'a\n1' }, { key: closed.key }), 403, 'api_access_disabled');
      await problem(await run(agentC, { input: 'a\n1' }, { key: closed.key }), 403, 'api_access_disabled');
      assert.equal(await runsOf(agentC), 1);

      // The allowance is counted against the plan the workspace is on now, either way.
      const moved = await createTestWorkspace(h, { plan: 'professional' });
      const agentM = (await createLiveAgent(h, moved.workspace.id, csvAgent)).id;
      assert.equal((await run(agentM, { input: 'a\n1' }, { key: moved.key })).status, 202);
      const free = planLimits.free.runsPerMonth!;
      await h.stack.knex('workspace_usage').where({ workspace_id: moved.workspace.id }).update({ runs: free });
      await setPlan(h.stack.knex, moved.workspace.id, 'free');
      await problem(await run(agentM, { input: 'a\n1' }, { key: moved.key }), 429, 'plan_allowance_exhausted');
      await setPlan(h.stack.knex, moved.workspace.id, 'professional');
      assert.equal((await run(agentM, { input: 'a\n1' }, { key: moved.key })).status, 202);
      assert.equal(await runsOf(agentM), 2);
    });

    it('403 when the workspace has no API access, or the key lacks the run scope', async () => {
      const closed = await createTestWorkspace(h, { apiEnabled: false });
      await problem(await run(agentId, { input: 'a\n1' }, { key: closed.key }), 403, 'api_access_disabled');
      const readOnly = await createTestWorkspace(h, { scopes: ['read'] });
      const agent = await createLiveAgent(h, readOnly.workspace.id, csvAgent);
      await problem(await run(agent.id, { input: 'a\n1' }, { key: readOnly.key }), 403, 'missing_scope');
    });

    it('404 for an agent of another workspace, never revealing it; likewise its runs and approvals', async () => {
      const b = await createTestWorkspace(h);
      const agentB = await createLiveAgent(h, b.workspace.id, csvAgent);
      await problem(await run(agentB.id, { input: 'a\n1' }), 404, 'agent_not_found');
      await problem(await run('no-such-agent', { input: 'a\n1' }), 404, 'agent_not_found');
      const runB = await json(await run(agentB.id, { input: 'a\n1' }, { key: b.key }));
      await problem(await call(`/v1/runs/${runB.id}`), 404, 'run_not_found');
      await problem(await call(`/v1/runs/${runB.id}/items`), 404, 'run_not_found');
      await problem(await call(`/v1/runs/${runB.id}/cancel`, { method: 'POST' }), 404, 'run_not_found');
      const listed = await json(await call('/v1/runs'));
      assert.ok(!listed.data.some((r: { id: string }) => r.id === runB.id));
    });

    it('records a start from the console as manual, under the same rules', async () => {
      const res = await call(`/v1/agents/${agentId}/manual-run`, { method: 'POST', json: { input: 'a\n1' } });
      assert.equal(res.status, 202);
      assert.equal((await json(res)).trigger, 'manual');
      const draft = await createLiveAgent(h, ws, csvAgent, 'draft');
      await problem(
        await call(`/v1/agents/${draft.id}/manual-run`, { method: 'POST', json: { input: 'a\n1' } }),
        409,
        'agent_not_live',
      );
    });

    it('409 when the agent is not live, naming its state', async () => {
      const draft = await createLiveAgent(h, ws, csvAgent, 'draft');
      const body = await problem(await run(draft.id, { input: 'a\n1' }), 409, 'agent_not_live');
      assert.equal(body.state, 'draft');
      assert.match(body.detail, /draft/);
    });

    it('an agent paused, edited or deleted elsewhere since this process read it: never a run on what it was', async () => {
      // The API keeps the agent rows it read as hints; another web process (here: the database directly) changes
      // the agent behind its back.
      const agent = await createLiveAgent(h, ws, { ...csvAgent, nodes: [{ kind: 'input', id: 'in', format: 'json' }] });
      const first = await run(agent.id, { input: '[1]' });
      assert.equal(first.status, 202);
      // Finished before the pause below, else it would begin on a paused agent and be skipped (and refunded).
      await waitForRun(h, (await json(first)).id);
      const runsOf = async () => (await h.stack.knex('runs').where({ agent_id: agent.id })).length;
      const usage = async () =>
        (await h.stack.knex('workspace_usage').where({ workspace_id: ws, month: currentMonth() }).first()).runs;
      const [runsBefore, usageBefore] = [await runsOf(), await usage()];

      await h.stack.knex('agents').where({ id: agent.id }).update({ state: 'paused' });
      const paused = await problem(await run(agent.id, { input: '[2]' }), 409, 'agent_not_live');
      assert.equal(paused.state, 'paused');
      assert.equal(await runsOf(), runsBefore, 'no run opened on a paused agent');
      assert.equal(await usage(), usageBefore, 'nor counted');

      // Live again, and edited: version 2 reads lines. An input version 1 would refuse starts on version 2.
      await updateAgent(
        h.stack.knex,
        agent,
        agentSpecSchema.parse({ ...csvAgent, nodes: [{ kind: 'input', id: 'in', format: 'lines' }] }),
      );
      await h.stack.knex('agents').where({ id: agent.id }).update({ state: 'live' });
      const edited = await run(agent.id, { input: 'not json' });
      assert.equal(edited.status, 202, await edited.clone().text());
      assert.equal((await json(edited)).agent_version, 2);
      assert.equal((await run(agent.id, { input: 'still lines' }).then(json)).agent_version, 2);

      // Deleted: an agent without runs, read once by a refused start.
      const other = await createLiveAgent(h, ws, csvAgent);
      await problem(await run(other.id, {}), 422, 'invalid_body');
      await h.stack.knex('agents').where({ id: other.id }).delete();
      await problem(await run(other.id, { input: 'x' }), 404, 'agent_not_found');
    });

    it('400 malformed JSON, 415 not JSON, 413 too large, 422 bad input', async () => {
      await problem(
        await call(`/v1/agents/${agentId}/run`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"input": ',
        }),
        400,
        'malformed_json',
      );
      await problem(
        await call(`/v1/agents/${agentId}/run`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: 'input=1',
        }),
        415,
        'unsupported_media_type',
      );
      await problem(await run(agentId, { input: 'x'.repeat(70 * 1024) }), 413, 'body_too_large');
      await problem(await run(agentId, {}), 422, 'invalid_body');
      await problem(await run(agentId, { input: 42 }), 422, 'invalid_body');
      await problem(await run(agentId, ['input']), 422, 'invalid_body');
      const jsonAgent = await createLiveAgent(h, ws, {
        name: 'json',
        nodes: [{ kind: 'input', id: 'in', format: 'json' }],
      });
      const body = await problem(await run(jsonAgent.id, { input: 'not json' }), 422, 'input_unparseable');
      assert.match(body.detail, /not valid JSON/);
      // nothing was started by any of these
      const runs = await h.stack.knex('runs').where({ agent_id: jsonAgent.id });
      assert.equal(runs.length, 0);
    });

    it('the same Idempotency-Key returns the same run; another body with it is 422; 50 concurrent starts make one run', async () => {
      const k = `idem-${Date.now()}`;
      const first = await json(await run(agentId, { input: 'a\n1' }, { headers: { 'idempotency-key': k } }));
      const again = await run(agentId, { input: 'a\n1' }, { headers: { 'idempotency-key': k } });
      assert.equal(again.status, 202);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal((await json(again)).id, first.id);
      await problem(
        await run(agentId, { input: 'a\n2' }, { headers: { 'idempotency-key': k } }),
        422,
        'idempotency_key_reused',
      );

      const k2 = `idem-burst-${Date.now()}`;
      const responses = await Promise.all(
        Array.from({ length: 50 }, () => run(agentId, { input: 'a\n1' }, { headers: { 'idempotency-key': k2 } })),
      );
      const ids = new Set(
        await Promise.all(responses.map(async (r) => (assert.equal(r.status, 202), (await json(r)).id))),
      );
      assert.equal(ids.size, 1);
      assert.equal((await h.stack.knex('runs').where({ idempotency_key: k2 })).length, 1);
    });

    it('429 with Retry-After once the plan allowance is used up; 200 concurrent starts with 100 left → exactly 100', async () => {
      const free = await createTestWorkspace(h, { plan: 'free' });
      const agent = await createLiveAgent(h, free.workspace.id, {
        ...csvAgent,
        nodes: [{ kind: 'input', id: 'in', format: 'lines' }],
      });
      const responses = await Promise.all(
        Array.from({ length: 200 }, (_, i) => run(agent.id, { input: `line ${i}` }, { key: free.key })),
      );
      const statuses = responses.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 202).length, 100);
      assert.equal(statuses.filter((s) => s === 429).length, 100);
      const refused = responses.find((r) => r.status === 429)!;
      await problem(refused, 429, 'plan_allowance_exhausted');
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      const usage = await h.stack
        .knex('workspace_usage')
        .where({ workspace_id: free.workspace.id, month: currentMonth() })
        .first();
      assert.equal(usage.runs, 100);
      assert.equal((await h.stack.knex('runs').where({ workspace_id: free.workspace.id })).length, 100);
    });
  });

  describe('request rate per API key', () => {
    it('429 rate_limited with Retry-After past the rate; a refused start opens nothing; other keys are unaffected', async () => {
      // 1 request a second, bursts of 10: the eleventh of 30 requests sent at once is over.
      const limited = await startApi(h, { apiRateLimit: 1 });
      try {
        const other = await createTestWorkspace(h);
        const agent = await createLiveAgent(h, other.workspace.id, {
          name: 'rate',
          nodes: [{ kind: 'input', id: 'in', format: 'lines' }],
        });
        const start = (k: string) =>
          checkedFetch(`${limited.url}/v1/agents/${agent.id}/run`, {
            method: 'POST',
            headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
            body: JSON.stringify({ input: 'x' }),
          });
        const responses = await Promise.all(Array.from({ length: 30 }, () => start(other.key)));
        const accepted = responses.filter((r) => r.status === 202).length;
        const refused = responses.filter((r) => r.status === 429);
        assert.ok(accepted >= 10 && refused.length > 0, `${accepted} accepted, ${refused.length} refused`);
        assert.equal(accepted + refused.length, 30);
        const body = await problem(refused[0], 429, 'rate_limited');
        assert.match(body.detail, /1 requests a second/);
        assert.ok(Number(refused[0].headers.get('retry-after')) >= 1);
        const opened = await h.stack.knex('runs').where({ agent_id: agent.id });
        assert.equal(opened.length, accepted, 'a refused start opened no run');

        // Another key of the same workspace has its own rate.
        const { key: second } = await createApiKey(h.stack.knex, other.workspace.id, 'second', ['run']);
        assert.equal((await start(second)).status, 202);
      } finally {
        await limited.close();
      }
    });
  });

  describe('agents', () => {
    it('creates, versions and moves an agent through its lifecycle; Draft → Ready needs a successful test run', async () => {
      const created = await call('/v1/agents', { method: 'POST', json: csvAgent });
      assert.equal(created.status, 201);
      const agent = await json(created);
      assert.equal(agent.state, 'draft');
      const refused = await problem(
        await call(`/v1/agents/${agent.id}/state`, { method: 'POST', json: { state: 'live' } }),
        409,
        'invalid_transition',
      );
      assert.match(refused.detail, /can move to ready/);
      await problem(
        await call(`/v1/agents/${agent.id}/state`, { method: 'POST', json: { state: 'ready' } }),
        409,
        'invalid_transition',
      );

      const test = await json(
        await call(`/v1/agents/${agent.id}/test-run`, { method: 'POST', json: { input: 'a\n1' } }),
      );
      assert.equal(test.trigger, 'test');
      await waitForRun(h, test.id);
      for (const state of ['ready', 'live', 'paused', 'live']) {
        const res = await call(`/v1/agents/${agent.id}/state`, { method: 'POST', json: { state } });
        assert.equal(res.status, 200, await res.clone().text());
        assert.equal((await json(res)).state, state);
      }
      const updated = await json(
        await call(`/v1/agents/${agent.id}`, { method: 'PUT', json: { ...csvAgent, description: 'v2' } }),
      );
      assert.equal(updated.current_version, 2);
      const versions = await json(await call(`/v1/agents/${agent.id}/versions`));
      assert.deepEqual(
        versions.data.map((v: { version: number }) => v.version),
        [2, 1],
      );
      assert.equal((await json(await call(`/v1/agents/${agent.id}/versions/1`))).spec.description, '');
    });

    it('the Free plan holds 3 agents: 8 concurrent creates make exactly 3, the rest 403 plan_agent_limit', async () => {
      const free = await createTestWorkspace(h, { plan: 'free' });
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          call('/v1/agents', { method: 'POST', key: free.key, json: { ...csvAgent, name: `agent ${i}` } }),
        ),
      );
      assert.equal(responses.filter((r) => r.status === 201).length, 3);
      const refused = responses.filter((r) => r.status === 403);
      assert.equal(refused.length, 5);
      const body = await problem(refused[0], 403, 'plan_agent_limit');
      assert.match(body.detail, /free plan allows 3 agents/);
      assert.equal((await h.stack.knex('agents').where({ workspace_id: free.workspace.id })).length, 3);
    });

    it('pages through the agents of a workspace newest first, every agent once', async () => {
      const t = await createTestWorkspace(h);
      const made = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          call('/v1/agents', { method: 'POST', key: t.key, json: { ...csvAgent, name: `paged ${i}` } }).then(json),
        ),
      );
      const seen: string[] = [];
      let cursor = '';
      for (let pages = 0; pages < 10; pages++) {
        const page = await json(await call(`/v1/agents?limit=2${cursor}`, { key: t.key }));
        assert.ok(page.data.length <= 2);
        seen.push(...page.data.map((a: { id: string }) => a.id));
        if (!page.next_cursor) break;
        cursor = `&cursor=${page.next_cursor}`;
      }
      assert.deepEqual([...seen].sort(), made.map((a) => a.id).sort());
      await problem(await call('/v1/agents?limit=501', { key: t.key }), 400, 'invalid_limit');
      await problem(await call('/v1/agents?cursor=zzz', { key: t.key }), 400, 'invalid_cursor');
    });

    it('refuses an invalid graph with 422 and a message per problem', async () => {
      const body = await problem(
        await call('/v1/agents', {
          method: 'POST',
          json: { name: 'x', nodes: [{ kind: 'input', id: 'in', next: 'missing' }] },
        }),
        422,
        'invalid_body',
      );
      assert.match(body.detail, /node "in" points to "missing", which does not exist/);
      const retrieve = await problem(
        await call('/v1/agents', {
          method: 'POST',
          json: {
            name: 'x',
            nodes: [
              { kind: 'input', id: 'in', next: 'r' },
              { kind: 'retrieve', id: 'r', query: '{{q}}' },
            ],
          },
        }),
        422,
        'retrieve_without_sources',
      );
      assert.match(retrieve.detail, /node "r" searches the agent's sources, but the agent has none/);
    });

    it('lists the built-in tools with what they touch and whether a call needs approval', async () => {
      const tools = await json(await call('/v1/tools'));
      const post = tools.data.find((t: { name: string }) => t.name === 'http.request');
      assert.equal(post.side_effect, 'external');
      assert.equal(post.input_schema.type, 'object');
    });

    it('keeps a per-agent state store with optimistic concurrency', async () => {
      const put = await call(`/v1/agents/${agentId}/state-store/limit`, { method: 'PUT', json: { value: 5 } });
      const entry = await json(put);
      assert.equal(entry.value, 5);
      const listed = await json(await call(`/v1/agents/${agentId}/state-store`));
      assert.deepEqual(
        listed.data.map((e: { key: string; value: unknown }) => [e.key, e.value]),
        [['limit', 5]],
      );
      await problem(
        await call(`/v1/agents/${agentId}/state-store/limit`, {
          method: 'PUT',
          json: { value: 6, expected_version: entry.version + 1 },
        }),
        409,
        'state_conflict',
      );
      assert.equal(
        (
          await json(
            await call(`/v1/agents/${agentId}/state-store/limit`, {
              method: 'PUT',
              json: { value: 7, expected_version: entry.version },
            }),
          )
        ).value,
        7,
      );
      assert.equal((await call(`/v1/agents/${agentId}/state-store/limit`, { method: 'DELETE' })).status, 204);
      await problem(await call(`/v1/agents/${agentId}/state-store/limit`), 404, 'state_key_not_found');
    });
  });

  describe('API keys', () => {
    it('lists keys without secrets, creates one shown once, rotates and revokes at once', async () => {
      const created = await call('/v1/api-keys', { method: 'POST', json: { name: 'ci', scopes: ['run', 'read'] } });
      assert.equal(created.status, 201);
      const made = await json(created);
      assert.match(made.key, /^cadre_/);
      assert.deepEqual(made.scopes, ['run', 'read']);
      const listed = await json(await call('/v1/api-keys'));
      const entry = listed.data.find((k: Json) => k.id === made.id);
      assert.equal(entry.name, 'ci');
      assert.ok(!JSON.stringify(listed).includes(made.key.slice('cadre_'.length + 12 + 1)), 'no secret in the list');
      assert.ok(!('hash' in entry));
      assert.equal((await call('/v1/runs', { key: made.key })).status, 200);

      const rotated = await json(await call(`/v1/api-keys/${made.id}/rotate`, { method: 'POST' }));
      assert.equal(rotated.replaces, made.id);
      await problem(await call('/v1/runs', { key: made.key }), 401, 'revoked_api_key');
      assert.equal((await call('/v1/runs', { key: rotated.key })).status, 200);

      assert.equal((await call(`/v1/api-keys/${rotated.id}`, { method: 'DELETE' })).status, 204);
      await problem(await call('/v1/runs', { key: rotated.key }), 401, 'revoked_api_key');
      await problem(await call(`/v1/api-keys/${rotated.id}`, { method: 'DELETE' }), 404, 'api_key_not_found');
      await problem(
        await call('/v1/api-keys', { method: 'POST', json: { name: 'x', scopes: ['root'] } }),
        422,
        'invalid_body',
      );
    });

    it("never touches another workspace's keys, and needs the manage scope", async () => {
      const other = await createTestWorkspace(h);
      await problem(await call(`/v1/api-keys/${other.keyRecord.id}`, { method: 'DELETE' }), 404, 'api_key_not_found');
      await problem(
        await call(`/v1/api-keys/${other.keyRecord.id}/rotate`, { method: 'POST' }),
        404,
        'api_key_not_found',
      );
      assert.equal((await call('/v1/runs', { key: other.key })).status, 200);
      const runOnly = await createTestWorkspace(h, { scopes: ['run'] });
      await problem(await call('/v1/api-keys', { key: runOnly.key }), 403, 'missing_scope');
    });
  });

  describe('agent copies', () => {
    it('exports, imports, duplicates and diffs versions of an agent', async () => {
      const agent = await json(await call('/v1/agents', { method: 'POST', json: csvAgent }));
      await call(`/v1/agents/${agent.id}`, {
        method: 'PUT',
        json: {
          ...csvAgent,
          description: 'second',
          nodes: [csvAgent.nodes[0], { ...csvAgent.nodes[1], format: 'json' }],
        },
      });
      const diff = await json(await call(`/v1/agents/${agent.id}/diff?from=1&to=2`));
      const byPath = (a: Json, b: Json) => a.path.localeCompare(b.path);
      assert.deepEqual(diff.changes.sort(byPath), [
        { path: 'description', from: '', to: 'second' },
        { path: 'nodes[1].format', from: 'csv', to: 'json' },
      ]);
      await problem(await call(`/v1/agents/${agent.id}/diff?from=1&to=9`), 404, 'version_not_found');
      await problem(await call(`/v1/agents/${agent.id}/diff?from=1&to=x`), 400, 'invalid_version');

      const exported = await json(await call(`/v1/agents/${agent.id}/export`));
      const imported = await json(await call('/v1/agents/import', { method: 'POST', json: exported }));
      assert.notEqual(imported.id, agent.id);
      assert.equal(imported.state, 'draft');
      assert.equal(imported.spec.description, 'second');

      const copy = await call(`/v1/agents/${agent.id}/duplicate`, { method: 'POST' });
      assert.equal(copy.status, 201);
      const duplicated = await json(copy);
      assert.equal(duplicated.name, 'csv (copy)');
      assert.equal(duplicated.current_version, 1);
      assert.deepEqual(duplicated.spec.nodes, exported.nodes);
    });

    it("warns, never refuses, when an agent is created, imported or renamed with another agent's name", async () => {
      const name = `Payments ${randomUUID().slice(0, 6)}`;
      const spec = { ...csvAgent, name };
      const first = await json(await call('/v1/agents', { method: 'POST', json: spec }));
      assert.deepEqual(first.warnings, [], 'the first of a name is not warned about');
      const warning = (n: string) =>
        `another agent is already named “${n}”; rename one so runs, approvals and notifications are not mixed up`;

      const imported = await call('/v1/agents/import', { method: 'POST', json: { ...spec, name: name.toUpperCase() } });
      assert.equal(imported.status, 201, 'an import of the same name is made');
      assert.deepEqual((await json(imported)).warnings, [warning(name.toUpperCase())]);
      const created = await call('/v1/agents', { method: 'POST', json: spec });
      assert.equal(created.status, 201);
      assert.deepEqual((await json(created)).warnings, [warning(name)]);

      // Saving an agent under its own name is no warning; renaming it to another's is.
      const other = await json(await call('/v1/agents', { method: 'POST', json: { ...spec, name: `${name} (2)` } }));
      const kept = await json(await call(`/v1/agents/${other.id}`, { method: 'PUT', json: other.spec }));
      assert.deepEqual(kept.warnings, []);
      const renamed = await json(await call(`/v1/agents/${other.id}`, { method: 'PUT', json: spec }));
      assert.deepEqual(renamed.warnings, [warning(name)]);
    });
  });

  describe('approvals and cancel', () => {
    it('decides a pending approval through the API, recording who decided; a second decision is 409', async () => {
      const agent = await createLiveAgent(h, ws, {
        name: 'gate',
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'gate' },
          { kind: 'approval', id: 'gate', message: 'Pay {{amount}}?', next: 'sum' },
          { kind: 'tool', id: 'sum', tool: 'state.increment', arguments: { key: 'paid', by: '{{amount}}' } },
        ],
      });
      const started = await json(await run(agent.id, { input: '[{"amount": 40}]' }));
      await waitForRun(h, started.id, (r) => r.status === 'needs_review');
      const pending = await json(await call(`/v1/approvals?status=pending`));
      const approval = pending.data.find((a: { run_id: string }) => a.run_id === started.id);
      assert.equal(approval.message, 'Pay 40?');
      const res = await call(`/v1/approvals/${approval.id}/decision`, {
        method: 'POST',
        json: { decision: 'approve', comment: 'ok' },
      });
      assert.equal(res.status, 200, await res.clone().text());
      const decided = await json(res);
      assert.equal(decided.status, 'approved');
      assert.equal(decided.decided_by, 'API key "test key"');
      await problem(
        await call(`/v1/approvals/${approval.id}/decision`, { method: 'POST', json: { decision: 'reject' } }),
        409,
        'approval_decided',
      );
      assert.equal((await waitForRun(h, started.id)).status, 'completed');
      assert.equal((await h.stack.knex('agent_state').where({ agent_id: agent.id, key: 'paid' }).first()).value, 40);
    });

    it("lists one run's approvals page by page, oldest first", async () => {
      const agent = await createLiveAgent(h, ws, {
        name: 'gates',
        nodes: [
          { kind: 'input', id: 'in', format: 'lines', next: 'gate' },
          { kind: 'approval', id: 'gate', message: 'Go on with {{text}}?' },
        ],
      });
      const started = await json(await run(agent.id, { input: 'a\nb\nc' }));
      await waitForRun(h, started.id, (r) => r.status === 'needs_review');
      const seen: Json[] = [];
      let cursor: string | null = null;
      do {
        const page: Json = await json(
          await call(`/v1/approvals?status=pending&run_id=${started.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`),
        );
        assert.ok(page.data.length <= 2);
        seen.push(...page.data);
        cursor = page.next_cursor;
      } while (cursor);
      assert.equal(seen.length, 3, 'each approval of the run once');
      assert.ok(seen.every((a) => a.run_id === started.id));
      assert.equal(new Set(seen.map((a) => a.id)).size, 3);
      const times = seen.map((a) => Date.parse(a.requested_at));
      assert.deepEqual(
        times,
        [...times].sort((x, y) => x - y),
        'oldest first',
      );
      assert.deepEqual((await json(await call(`/v1/approvals?run_id=${randomUUID()}`))).data, []);
      await problem(await call('/v1/approvals?limit=0'), 400, 'invalid_limit');
      await call(`/v1/runs/${started.id}/cancel`, { method: 'POST' });
    });

    it('cancels a running run; cancelling a finished one is 409', async () => {
      const agent = await createLiveAgent(h, ws, {
        name: 'wait',
        nodes: [
          { kind: 'input', id: 'in', format: 'lines', next: 'gate' },
          { kind: 'approval', id: 'gate' },
        ],
      });
      const started = await json(await run(agent.id, { input: 'x\ny' }));
      await waitForRun(h, started.id, (r) => r.status === 'needs_review');
      assert.equal((await call(`/v1/runs/${started.id}/cancel`, { method: 'POST' })).status, 202);
      const done = await waitForRun(h, started.id);
      assert.equal(done.status, 'cancelled');
      await problem(await call(`/v1/runs/${started.id}/cancel`, { method: 'POST' }), 409, 'run_finished');
    });

    it('streams live progress as server-sent events until the run ends', async () => {
      const agent = await createLiveAgent(h, ws, {
        name: 'stream',
        nodes: [
          { kind: 'input', id: 'in', format: 'lines', next: 'gate' },
          { kind: 'approval', id: 'gate' },
        ],
      });
      const started = await json(await run(agent.id, { input: 'x' }));
      const res = await call(`/v1/runs/${started.id}/events`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      const events: { event: string; data: Json }[] = [];
      let buffer = '';
      let decided = false;
      while (!events.some((e) => e.event === 'end')) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        for (let i; (i = buffer.indexOf('\n\n')) >= 0; buffer = buffer.slice(i + 2)) {
          const block = buffer.slice(0, i);
          const event = /^event: (.+)$/m.exec(block)?.[1];
          const data = /^data: (.+)$/m.exec(block)?.[1];
          if (event && data) events.push({ event, data: JSON.parse(data) });
        }
        if (!decided && events.some((e) => e.data.status === 'needs_review')) {
          decided = true; // a reviewer approves while the stream is open
          const pending = await json(await call(`/v1/runs/${started.id}/approvals`));
          await call(`/v1/approvals/${pending.data[0].id}/decision`, { method: 'POST', json: { decision: 'approve' } });
        }
      }
      const statuses = events.filter((e) => e.event === 'progress').map((e) => e.data.status);
      assert.ok(statuses.includes('needs_review'), statuses.join());
      assert.equal(statuses.at(-1), 'completed');
      assert.deepEqual(events.at(-1), { event: 'end', data: { status: 'completed' } });
    });

    it('lists runs newest first with filters and cursor pagination', async () => {
      const page1 = await json(await call(`/v1/runs?agent_id=${agentId}&limit=2`));
      assert.equal(page1.data.length, 2);
      assert.ok(page1.next_cursor);
      const page2 = await json(await call(`/v1/runs?agent_id=${agentId}&limit=2&cursor=${page1.next_cursor}`));
      assert.ok(page2.data.length >= 1);
      assert.ok(new Date(page1.data[1].created_at) >= new Date(page2.data[0].created_at));
      assert.ok(!page2.data.some((r: { id: string }) => page1.data.some((p: { id: string }) => p.id === r.id)));
      await problem(await call('/v1/runs?status=bogus'), 400, 'invalid_status');
      await problem(await call('/v1/runs?cursor=zzz'), 400, 'invalid_cursor');
      const forged = Buffer.from(JSON.stringify(['yesterday', 'not-an-id'])).toString('base64url');
      await problem(await call(`/v1/runs?cursor=${forged}`), 400, 'invalid_cursor');
    });

    it('pages through runs opened within the same millisecond without skipping or repeating one', async () => {
      // Concurrent starts share milliseconds; Postgres keeps microseconds, JavaScript dates do not.
      const agent = await createLiveAgent(h, ws, {
        ...csvAgent,
        nodes: [{ kind: 'input', id: 'in', format: 'lines' }],
      });
      const ids = Array.from({ length: 7 }, () => randomUUID());
      await h.stack.knex('runs').insert(
        ids.map((id, i) => ({
          id,
          workspace_id: ws,
          agent_id: agent.id,
          agent_version: 1,
          trigger: 'api',
          input: 'x',
          status: 'completed',
          created_at: `2026-01-01T00:00:00.000${100 + i * 100}Z`,
        })),
      );
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Json = await json(
          await call(`/v1/runs?agent_id=${agent.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`),
        );
        seen.push(...page.data.map((r: { id: string }) => r.id));
        cursor = page.next_cursor;
      } while (cursor);
      assert.deepEqual(seen, [...ids].reverse(), 'every run once, newest first');
    });
  });
});
