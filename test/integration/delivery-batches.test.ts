// Micro-batching triggers: webhook deliveries and form submissions collected for a window into one run of many
// items. Each delivery is stored before its 202, keeps its delivery id in its item, is refused when sent again,
// and is in exactly one run, also when the worker is SIGKILLed while a window is open.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { checkedFetch } from '../support/openapi-check';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  spawnWorker,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Standard Webhooks signing, written out here rather than borrowed from the code under test. */
const sign = (secret: string, id: string, ts: number, body: string) =>
  'v1,' +
  createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${id}.${ts}.${body}`)
    .digest('base64');

const countingAgent = {
  name: 'batched',
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'count' },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'seen', by: 1 }, next: 'out' },
    { kind: 'output', id: 'out', format: 'json' },
  ],
};

describe('micro-batching triggers', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let key: string;
  let ws: string;
  const workers: ChildProcess[] = [];

  before(async () => {
    h = await createHarness({ worker: false }); // workers run as processes, so one can be killed
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
  });
  after(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await api?.close();
    await h?.close();
  });

  function startWorker(): ChildProcess {
    const child = spawnWorker(h);
    workers.push(child);
    return child;
  }

  const call = async (url: string, init: { json?: unknown } = {}) => {
    const res = await checkedFetch(`${api.url}${url}`, {
      method: init.json !== undefined ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Json };
  };

  async function webhookAgent(batch: { max_wait_ms: number; max_items: number }) {
    const agent = await createLiveAgent(h, ws, countingAgent);
    const created = await call(`/v1/agents/${agent.id}/triggers`, { json: { kind: 'webhook', batch } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.config.batch, batch);
    const deliver = async (body: unknown, id = `msg_${randomUUID()}`) => {
      const raw = JSON.stringify(body);
      const ts = Math.floor(Date.now() / 1000);
      return checkedFetch(`${api.url}/v1/hooks/${created.body.id}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(ts),
          'webhook-signature': sign(created.body.secret, id, ts, raw),
        },
        body: raw,
      });
    };
    return { agent, trigger: created.body, deliver };
  }

  /** Waits until every accepted delivery's item is in a run that ended; returns those runs' items. */
  async function itemsOnceDone(agentId: string, deliveries: number) {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const items: { delivery_id: string; status: string }[] = await h.stack
        .knex('run_items as i')
        .join('runs as r', 'r.id', 'i.run_id')
        .where('r.agent_id', agentId)
        .whereNotNull('r.ended_at')
        .select(h.stack.knex.raw(`i.data->>'delivery_id' as delivery_id`), 'i.status');
      if (items.length >= deliveries) return items;
      if (Date.now() > deadline) assert.fail(`only ${items.length} of ${deliveries} items done in time`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('collects deliveries into runs of at most max_items, each item keeping its delivery id; a resend is 409', async () => {
    startWorker();
    const { agent, deliver } = await webhookAgent({ max_wait_ms: 2000, max_items: 5 });
    const accepted: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await deliver({ invoice: `INV-${i}`, amount: i });
      const body = (await res.json()) as Json;
      assert.equal(res.status, 202, JSON.stringify(body));
      assert.equal(body.status, 'accepted');
      assert.equal(body.run_id, null);
      accepted.push(body.delivery_id);
    }
    // The same webhook-id again: refused, and nothing is added.
    const id = `msg_${randomUUID()}`;
    assert.equal((await deliver({ invoice: 'INV-X', amount: 1 }, id)).status, 202);
    const again = await deliver({ invoice: 'INV-X', amount: 1 }, id);
    assert.equal(again.status, 409);
    assert.equal(((await again.json()) as Json).code, 'duplicate_delivery');

    const items = await itemsOnceDone(agent.id, 13);
    assert.equal(items.length, 13, 'each delivery is one item');
    assert.equal(new Set(items.map((i) => i.delivery_id)).size, 13);
    for (const d of accepted)
      assert.ok(
        items.some((i) => i.delivery_id === d),
        `delivery ${d} has its item`,
      );
    assert.ok(items.every((i) => i.status === 'done'));
    const runs = await h.stack.knex('runs').where({ agent_id: agent.id }).orderBy('created_at').select('total');
    assert.deepEqual(
      runs.map((r) => r.total),
      [5, 5, 3],
      'two full batches, then one closed by its window',
    );
    const state = await call(`/v1/agents/${agent.id}/state-store/seen`);
    assert.equal(state.body.value, 13);
    const timeline = (await call(`/v1/agents/${agent.id}/timeline?limit=100`)).body.data as Json[];
    const fired = timeline.filter((e) => e.kind === 'trigger_fired');
    assert.equal(fired.length, 3);
    assert.match(fired.at(-1)!.message, /a batch of 5 deliveries closed, started a run/);
  });

  it('concurrent deliveries each land in exactly one batch of at most max_items', async () => {
    const { agent, deliver } = await webhookAgent({ max_wait_ms: 1000, max_items: 7 });
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let i = next++; i < 60; i = next++) assert.equal((await deliver({ n: i })).status, 202);
      }),
    );
    const items = await itemsOnceDone(agent.id, 60);
    assert.equal(items.length, 60);
    assert.equal(new Set(items.map((i) => i.delivery_id)).size, 60);
    const totals = (await h.stack.knex('runs').where({ agent_id: agent.id }).select('total')).map((r) => r.total);
    assert.ok(
      totals.every((t) => t >= 1 && t <= 7),
      `batch sizes ${totals}`,
    );
  });

  it('a form trigger batches submissions the same way', async () => {
    const agent = await createLiveAgent(h, ws, countingAgent);
    const created = await call(`/v1/agents/${agent.id}/triggers`, {
      json: {
        kind: 'form',
        title: 'Claims',
        fields: [{ name: 'claim', label: 'Claim', required: true }],
        batch: { max_wait_ms: 500, max_items: 100 },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    for (let i = 0; i < 3; i++) {
      const res = await checkedFetch(`${api.url}/v1/forms/${created.body.id}/submissions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ claim: `C-${i}` }),
      });
      assert.equal(res.status, 202);
    }
    const items = await itemsOnceDone(agent.id, 3);
    assert.equal(items.length, 3);
    const [run] = await h.stack.knex('runs').where({ agent_id: agent.id }).select('id', 'total', 'trigger');
    assert.deepEqual({ total: run.total, trigger: run.trigger }, { total: 3, trigger: 'form' });
    assert.equal((await waitForRun(h, run.id)).status, 'completed');
  });

  it('loses and doubles no delivery when the worker is SIGKILLed while a window is open', async () => {
    for (const w of workers) w.kill('SIGKILL');
    const first = startWorker();
    const { agent, deliver } = await webhookAgent({ max_wait_ms: 3000, max_items: 1000 });
    for (let i = 0; i < 30; i++) assert.equal((await deliver({ n: i })).status, 202);
    first.kill('SIGKILL'); // the window's workflow is waiting on its timer; the worker that ran it is gone
    for (let i = 30; i < 60; i++) assert.equal((await deliver({ n: i })).status, 202);
    startWorker();
    const items = await itemsOnceDone(agent.id, 60);
    assert.equal(items.length, 60);
    assert.equal(new Set(items.map((i) => i.delivery_id)).size, 60, 'every delivery once');
    assert.equal((await call(`/v1/agents/${agent.id}/state-store/seen`)).body.value, 60);
  });
});
