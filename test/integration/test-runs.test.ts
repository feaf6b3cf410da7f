// Testing a version on past items (POST /v1/agents/:id/test-runs): the new version runs over the inputs an earlier
// run took, in test mode. A changed branch condition is reported item by item; tools that act elsewhere only plan
// their effect (asserted on the real SMTP server and the real PostgreSQL database the suite starts, and on the
// agent's own state store); approvals are recorded as "would ask" and nobody is waited on.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';
import { startPostgresServer, type DatabaseServer } from '../support/servers';
import { startSmtpSink, type SmtpSink } from '../support/sinks';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('test runs on past items', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let ws: string;
  let smtp: SmtpSink;
  let db: DatabaseServer;
  before(async () => {
    [smtp, db] = await Promise.all([startSmtpSink(), startPostgresServer()]);
    await db.admin.schema.createTable('orders', (t) => {
      t.increments('id');
      t.string('customer').notNullable();
      t.decimal('total', 10, 2).notNullable();
    });
    await db.admin.raw('grant all on orders, orders_id_seq to app');
    h = await createHarness({
      config: { http: { allowHosts: ['127.0.0.1'] }, smtp: { url: smtp.url, from: 'Cadre <cadre@test>' } } as never,
    });
    api = await startApi(h);
    const created = await createTestWorkspace(h);
    key = created.key;
    ws = created.workspace.id;
    const connection = await call('/v1/connections', 'POST', {
      name: 'shop',
      kind: 'postgres',
      config: { host: db.host, port: db.port, database: db.database, user: db.user, allow_writes: true },
      credentials: { password: db.password },
    });
    assert.equal(connection.status, 201, JSON.stringify(connection.body));
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await smtp?.close();
    await db?.stop();
  });

  async function call(path: string, method = 'GET', body?: unknown): Promise<{ status: number; body: Json }> {
    const res = await checkedFetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  /** Counts every invoice, mails small ones, books large ones in the shop's database; `askFirst` asks before booking. */
  const router = (threshold: number, askFirst = false) => ({
    name: 'invoice router',
    connections: ['shop'],
    policy: { approvals: { 'sql.insert': { mode: 'never' }, 'email.send': { mode: 'never' } } },
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'count' },
      {
        kind: 'tool',
        id: 'count',
        tool: 'state.increment',
        arguments: { key: 'seen' },
        save_as: 'seen',
        next: 'route',
      },
      {
        kind: 'branch',
        id: 'route',
        branches: [{ when: { field: 'amount', op: 'gt', value: threshold }, next: askFirst ? 'check' : 'book' }],
        otherwise: 'mail',
      },
      ...(askFirst ? [{ kind: 'approval', id: 'check', message: 'Book {{id}}?', next: 'book' }] : []),
      {
        kind: 'tool',
        id: 'book',
        tool: 'sql.insert',
        arguments: { connection: 'shop', table: 'orders', rows: [{ customer: '{{id}}', total: '{{amount}}' }] },
        save_as: 'booked',
        next: 'large',
      },
      {
        kind: 'tool',
        id: 'mail',
        tool: 'email.send',
        arguments: { to: '{{email}}', subject: 'Invoice {{id}}', text: 'Thanks.' },
        save_as: 'mailed',
        next: 'small',
      },
      { kind: 'output', id: 'large', format: 'json', fields: ['id'] },
      { kind: 'output', id: 'small', format: 'json', fields: ['id'] },
    ],
  });
  const invoices = [
    { id: 'a', amount: 10, email: 'a@example.com' },
    { id: 'b', amount: 75, email: 'b@example.com' },
    { id: 'c', amount: 200, email: 'c@example.com' },
  ];

  it('reports item by item how a changed branch condition routes past items, acting nowhere and asking no one', async () => {
    const agent = await createLiveAgent(h, ws, router(100));
    const started = await call(`/v1/agents/${agent.id}/run`, 'POST', { input: JSON.stringify(invoices) });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const original = await waitForRun(h, started.body.id);
    assert.equal(original.status, 'completed', JSON.stringify(original));
    assert.deepEqual(smtp.messages.map((m) => m.to[0]).sort(), ['a@example.com', 'b@example.com']);
    assert.deepEqual(
      (await db.admin('orders').select('customer')).map((r) => r.customer),
      ['c'],
    );
    const seen = async () => (await call(`/v1/agents/${agent.id}/state-store/seen`)).body.value;
    assert.equal(await seen(), 3);
    const dayRuns = async () =>
      ((await call(`/v1/stats/daily?days=1&agent_id=${agent.id}`)).body.data as Json[]).reduce((n, d) => n + d.runs, 0);
    assert.equal(await dayRuns(), 1);

    // Version 2 books from 50 up, and asks a person first.
    const edited = await call(`/v1/agents/${agent.id}`, 'PUT', router(50, true));
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    const version = edited.body.current_version;

    const refused = await call(`/v1/agents/${agent.id}/test-runs`, 'POST', { version: 99, from_run: original.id });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'version_not_found');
    const outside = await call(`/v1/agents/${agent.id}/test-runs`, 'POST', {
      version,
      from_run: original.id,
      items: [3],
    });
    assert.equal(outside.status, 422);
    assert.equal(outside.body.code, 'no_such_items');

    const test = await call(`/v1/agents/${agent.id}/test-runs`, 'POST', {
      version,
      from_run: original.id,
      items: [0, 1, 2],
    });
    assert.equal(test.status, 202, JSON.stringify(test.body));
    assert.equal(test.body.test_mode, true);
    assert.equal(test.body.trigger, 'test');
    assert.equal(test.body.agent_version, version);
    const ran = await waitForRun(h, test.body.id);
    assert.equal(ran.status, 'completed', JSON.stringify(ran));

    // Nothing acted: no mail, no row, no count, no approval waiting.
    assert.equal(smtp.messages.length, 2);
    assert.deepEqual(
      (await db.admin('orders').select('customer')).map((r) => r.customer),
      ['c'],
    );
    assert.equal(await seen(), 3);
    assert.deepEqual(await h.stack.knex('approvals').where({ run_id: ran.id }), []);

    const compared = await call(`/v1/agents/${agent.id}/test-runs/${ran.id}`);
    assert.equal(compared.status, 200, JSON.stringify(compared.body));
    const { summary, items } = compared.body;
    assert.equal(summary.text, '3 of 3 items give the same output; 1 routes differently');
    assert.deepEqual(
      items.map((i: Json) => [i.source.item_seq, i.original.route, i.test.route, i.difference.route]),
      [
        [0, 'small', 'small', 'same'],
        [1, 'small', 'large', 'changed'],
        [2, 'large', 'large', 'same'],
      ],
    );
    const planned = (i: Json) => i.planned_effects.map((p: Json) => `${p.kind}:${p.tool ?? p.node_id}`).sort();
    assert.deepEqual(planned(items[0]), ['tool:email.send', 'tool:state.increment']);
    assert.deepEqual(planned(items[1]), ['approval:check', 'tool:sql.insert', 'tool:state.increment']);
    assert.deepEqual(items[1].planned_effects.find((p: Json) => p.tool === 'sql.insert').arguments.rows, [
      { customer: 'b', total: 75 },
    ]);

    // Not a run of the agent's work on the dashboard.
    assert.equal(await dayRuns(), 1);

    // The last K settled items of the agent's runs (a test run's own items are not among them).
    const last = await call(`/v1/agents/${agent.id}/test-runs`, 'POST', { version, last: 2 });
    assert.equal(last.status, 202, JSON.stringify(last.body));
    const details = await call(`/v1/runs/${last.body.id}`);
    assert.deepEqual(details.body.item_sources, [{ run_id: original.id, items: [1, 2] }]);
    await waitForRun(h, last.body.id);
    assert.equal(smtp.messages.length, 2);
  });

  it('with the gate set, a version goes live only after its test run on past items shows no new failures', async () => {
    const agent = await createLiveAgent(h, ws, router(100));
    const started = await call(`/v1/agents/${agent.id}/run`, 'POST', { input: JSON.stringify(invoices.slice(0, 1)) });
    await waitForRun(h, started.body.id);
    const gated = router(100);
    const edited = await call(`/v1/agents/${agent.id}`, 'PUT', {
      ...gated,
      policy: { ...gated.policy, live_after_test_on_past_items: true },
    });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    const version = edited.body.current_version;
    await call(`/v1/agents/${agent.id}/state`, 'POST', { state: 'paused' });

    const refused = await call(`/v1/agents/${agent.id}/state`, 'POST', { state: 'live' });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, 'test_on_past_items_required');
    assert.equal(refused.body.make, `POST /v1/agents/${agent.id}/test-runs {"version": ${version}, "last": 20}`);

    const test = await call(`/v1/agents/${agent.id}/test-runs`, 'POST', { version, last: 20 });
    assert.equal(test.status, 202, JSON.stringify(test.body));
    await waitForRun(h, test.body.id);
    const live = await call(`/v1/agents/${agent.id}/state`, 'POST', { state: 'live' });
    assert.equal(live.status, 200, JSON.stringify(live.body));
    assert.equal(live.body.state, 'live');
  });
});
