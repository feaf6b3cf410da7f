// Retrying a run's failed items (POST /v1/runs/:id/retry): only the failed items run again, in a new run linked both
// ways to the first; what an item already did in another system is not done again (the effects ledger), and an item
// whose call may have acted without an answer is held back rather than retried.
import assert from 'node:assert/strict';
import http from 'node:http';
import { checkedFetch } from '../support/openapi-check';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';

/** A payment service and a booking service in one HTTP server: each answers per item as the test decides. */
async function startServices(answer: (path: string, id: string) => number) {
  const received: { path: string; id: string; key?: string }[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const id = String(JSON.parse(raw || '{}').id);
      received.push({ path: req.url!, id, key: req.headers['idempotency-key'] as string | undefined });
      const status = answer(req.url!, id);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: status < 300, id }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('retrying failed items', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let ws: string;
  let services: Awaited<ReturnType<typeof startServices>>;
  // The booking service refuses invoice B until it is fixed; the payment service never answers invoice C.
  let bookingRefuses = new Set(['B']);
  before(async () => {
    services = await startServices((path, id) => {
      if (path === '/pay' && id === 'C') return 503;
      if (path === '/book' && bookingRefuses.has(id)) return 400;
      return 200;
    });
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const created = await createTestWorkspace(h);
    key = created.key;
    ws = created.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await services?.close();
  });

  const call = async (path: string, method = 'GET', body?: unknown) => {
    const res = await checkedFetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
    return { status: res.status, body: (await res.json()) as any };
  };

  const payThenBook = () => ({
    name: 'pay and book',
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'pay' },
      {
        kind: 'tool',
        id: 'pay',
        tool: 'http.request',
        arguments: { method: 'POST', url: `${services.url}/pay`, body: { id: '{{id}}' } },
        save_as: 'payment',
        next: 'book',
      },
      {
        kind: 'tool',
        id: 'book',
        tool: 'http.request',
        arguments: { method: 'POST', url: `${services.url}/book`, body: { id: '{{id}}' } },
        save_as: 'booking',
        next: 'out',
      },
      { kind: 'output', id: 'out', format: 'json', fields: ['id'] },
    ],
  });

  it('runs only the failed items again, pays nobody twice, holds back an item whose payment may have gone through, and links both runs', async () => {
    const agent = await createLiveAgent(h, ws, payThenBook());
    const started = await call(`/v1/agents/${agent.id}/run`, 'POST', {
      input: JSON.stringify([{ id: 'A' }, { id: 'B' }, { id: 'C' }]),
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const first = await waitForRun(h, started.body.id);
    assert.equal(first.status, 'completed');
    assert.deepEqual([first.done, first.failed], [1, 2]);
    const paidBefore = services.received.filter((r) => r.path === '/pay' && r.id === 'B').length;
    assert.equal(paidBefore, 1);

    // Run details offer the retry: B can be retried, C is held back (its payment got no answer).
    const details = await call(`/v1/runs/${first.id}`);
    assert.deepEqual(details.body.retry, { failed_items: 2, retryable_items: [1], held_back_items: [2] });

    // Bad requests are refused clearly.
    const outside = await call(`/v1/runs/${first.id}/retry`, 'POST', { items: [7] });
    assert.equal(outside.status, 422);
    assert.equal(outside.body.code, 'no_such_items');
    const notFailed = await call(`/v1/runs/${first.id}/retry`, 'POST', { items: [0] });
    assert.equal(notFailed.status, 422);
    assert.equal(notFailed.body.code, 'items_not_failed');
    const negative = await call(`/v1/runs/${first.id}/retry`, 'POST', { items: [-1] });
    assert.equal(negative.status, 422);

    bookingRefuses = new Set();
    const retried = await call(`/v1/runs/${first.id}/retry`, 'POST', { items: 'failed' });
    assert.equal(retried.status, 202, JSON.stringify(retried.body));
    assert.equal(retried.body.retry_of, first.id);
    assert.deepEqual(retried.body.retried_items, [1]);
    assert.deepEqual(
      retried.body.held_back.map((b: { item_seq: number; reason: string }) => [b.item_seq, b.reason]),
      [[2, 'effect_in_doubt']],
    );
    assert.equal(retried.body.agent_version, first.agent_version);

    const second = await waitForRun(h, retried.body.id);
    assert.equal(second.status, 'completed');
    assert.deepEqual([second.total, second.done, second.failed], [1, 1, 0]);
    // B was paid once in all (the retry took the first run's recorded payment), and booked on the retry.
    assert.equal(services.received.filter((r) => r.path === '/pay' && r.id === 'B').length, 1);
    assert.equal(services.received.filter((r) => r.path === '/book' && r.id === 'B').length, 2);
    const item = await h.stack.knex('run_items').where({ run_id: second.id, seq: 0 }).first();
    assert.equal(item.data.id, 'B');
    assert.equal(item.data.payment.status, 200);

    // Linked both ways.
    const firstNow = await call(`/v1/runs/${first.id}`);
    assert.deepEqual(firstNow.body.retried_by, [second.id]);
    const secondNow = await call(`/v1/runs/${second.id}`);
    assert.equal(secondNow.body.retry_of, first.id);
    assert.deepEqual(secondNow.body.item_sources, [{ run_id: first.id, items: [1] }]);
    assert.equal(secondNow.body.trigger, 'manual');

    // B is retried already and C's payment is in doubt: nothing is left to retry.
    const again = await call(`/v1/runs/${first.id}/retry`, 'POST', { items: 'failed' });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'effects_in_doubt');
    assert.equal(services.received.filter((r) => r.path === '/pay' && r.id === 'C').length, 1);
    const twice = await call(`/v1/runs/${first.id}/retry`, 'POST', { items: [1] });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.code, 'already_retried');
  });

  it('retries on the current version when asked, and refuses a run with no failed items or one still running', async () => {
    const agent = await createLiveAgent(h, ws, payThenBook());
    bookingRefuses = new Set(['E']);
    const started = await call(`/v1/agents/${agent.id}/run`, 'POST', { input: JSON.stringify([{ id: 'E' }]) });
    const first = await waitForRun(h, started.body.id);
    assert.equal(first.failed, 1);
    const edited = await call(`/v1/agents/${agent.id}`, 'PUT', { ...payThenBook(), instructions: 'book after paying' });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    await h.stack.knex('agents').where({ id: agent.id }).update({ state: 'live' });
    bookingRefuses = new Set();
    const retried = await call(`/v1/runs/${first.id}/retry`, 'POST', { items: 'failed', version: 'current' });
    assert.equal(retried.status, 202, JSON.stringify(retried.body));
    assert.equal(retried.body.agent_version, edited.body.current_version);
    const second = await waitForRun(h, retried.body.id);
    assert.equal(second.status, 'completed');

    const none = await call(`/v1/runs/${second.id}/retry`, 'POST', { items: 'failed' });
    assert.equal(none.status, 409);
    assert.equal(none.body.code, 'no_failed_items');

    const waiting = await createLiveAgent(h, ws, {
      name: 'waits for a person',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'ok' },
        { kind: 'approval', id: 'ok', next: null },
      ],
    });
    const open = await call(`/v1/agents/${waiting.id}/run`, 'POST', { input: JSON.stringify([{ id: 'W' }]) });
    await waitForRun(h, open.body.id, (r) => r.status === 'needs_review');
    const early = await call(`/v1/runs/${open.body.id}/retry`, 'POST', { items: 'failed' });
    assert.equal(early.status, 409);
    assert.equal(early.body.code, 'run_not_finished');
    await call(`/v1/runs/${open.body.id}/cancel`, 'POST');
  });

  it('two people retrying the same run at the same moment: one retry run, the other is told it is under way', async () => {
    const agent = await createLiveAgent(h, ws, payThenBook());
    bookingRefuses = new Set(['F', 'G']);
    const started = await call(`/v1/agents/${agent.id}/run`, 'POST', {
      input: JSON.stringify([{ id: 'F' }, { id: 'G' }]),
    });
    const first = await waitForRun(h, started.body.id);
    assert.equal(first.failed, 2);
    bookingRefuses = new Set();
    const answers = await Promise.all([
      call(`/v1/runs/${first.id}/retry`, 'POST', { items: 'failed' }),
      call(`/v1/runs/${first.id}/retry`, 'POST', { items: [0] }),
      call(`/v1/runs/${first.id}/retry`, 'POST', { items: 'failed' }),
    ]);
    const accepted = answers.filter((a) => a.status === 202);
    assert.equal(accepted.length, 1, JSON.stringify(answers.map((a) => [a.status, a.body.code])));
    for (const refused of answers.filter((a) => a.status !== 202)) {
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.match(refused.body.code, /^(retry_under_way|already_retried)$/);
    }
    const retries = await h.stack.knex('runs').where({ retry_of: first.id });
    assert.equal(retries.length, 1, 'one retry run');
    await waitForRun(h, retries[0].id);
  });
});
