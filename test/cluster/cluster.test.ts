// The production shape (test/cluster/stack.ts): what a user does works across web processes and workers, limits
// are shared between the web processes, and runs survive losing a worker, a web process, the Temporal server or the
// database. The tests run in order on one cluster; a test that takes a process down brings it back before it ends.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { createApiKey } from '../../db/api-keys';
import { createAgent, getAgent } from '../../db/agents';
import { openRun } from '../../db/open-run';
import { createKnex } from '../../db/knex';
import { createWorkspace, setApiEnabled } from '../../db/workspaces';
import { agentSpecSchema } from '../../model/agent';
import { loadTemporalConfig } from '../../temporal.config';
import { connectTemporal } from '../../scripts/connections';
import { Person } from '../support/people';
import { startCluster, type Cluster } from './stack';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('Cadre on a Temporal cluster and PostgreSQL: two web processes, two workers', function () {
  this.timeout(900_000);
  let cluster: Cluster;
  let knex: Knex;
  let key: string;
  let workspaceId: string;

  before(async () => {
    cluster = await startCluster({ webEnv: { CADRE_API_RATE_LIMIT: '5' } });
    knex = createKnex(cluster.databaseUrl, { max: 4 });
    const ws = await createWorkspace(knex, 'cluster', 'enterprise');
    await setApiEnabled(knex, ws.id, true);
    workspaceId = ws.id;
    key = (await createApiKey(knex, ws.id, 'cluster key', ['run', 'read', 'manage'])).key;
  });
  let failed = false;
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    await knex?.destroy();
    const logs = await cluster?.stop({ keepLogs: failed });
    if (logs) console.log(`the cluster's process logs are kept in ${logs}`);
  });

  const call = async (web: number, url: string, json?: unknown, apiKey = key, method?: string) => {
    const res = await fetch(`${cluster.webs[web].url}/v1${url}`, {
      method: method ?? (json === undefined ? 'GET' : 'POST'),
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  /** Starts a run of `n` orders of running-total.json on web `web`; the agent counts each order in its state. */
  const startOrders = async (agentId: string, n: number, web = 0) => {
    const rows = Array.from({ length: n }, (_, i) => `O-${i},${(i % 7) + 1}`);
    const started = await call(web, `/agents/${agentId}/run`, { input: ['order,quantity', ...rows].join('\n') });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    return started.body.id as string;
  };
  const ended = (runId: string, web = 1) =>
    until(`run ${runId} to end`, async () => {
      const r = await call(web, `/runs/${runId}`);
      return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r.body : undefined;
    });
  /** Waits until the run has done some items and not all of them: a fault injected now hits it mid-run. */
  const midRun = async (runId: string) => {
    for (;;) {
      const { counts, status } = (await call(1, `/runs/${runId}`)).body;
      assert.equal(status, 'running', 'the run is still under way when the fault comes');
      if (counts.done > 0) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const ordersSeen = async (agentId: string) =>
    (await call(0, `/agents/${agentId}/state-store/orders_seen`)).body.value;
  const live = async (file: string) => {
    const spec = agentSpecSchema.parse(
      JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples', file), 'utf8')),
    );
    const agent = await createAgent(knex, workspaceId, spec);
    await knex('agents').where({ id: agent.id }).update({ state: 'live' });
    return agent.id;
  };
  async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 300_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check().catch(() => undefined);
      if (v !== undefined) return v;
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it('a run started on one web process is approved on the other and completes', async () => {
    const agentId = await live('approve-large-payments.json');
    const started = await call(0, `/agents/${agentId}/run`, {
      input: JSON.stringify([{ payee: 'Globex', amount: 4200 }]),
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const approval = await until('the approval', async () => {
      const list = await call(1, `/approvals?run_id=${started.body.id}`);
      return list.body.data.find((a: Json) => a.status === 'pending');
    });
    const decided = await call(1, `/approvals/${approval.id}/decision`, { decision: 'approve' });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    const run = await until('the run to end', async () => {
      const r = await call(0, `/runs/${started.body.id}`);
      return r.body.status === 'completed' ? r.body : undefined;
    });
    assert.equal(run.counts.done, 1);
  });

  it('one-item runs are settled at once on PostgreSQL, and deliveries to both web processes batch exactly once', async () => {
    const spec = JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples/route-csv-rows.json'), 'utf8'));
    const csvAgent = await live('route-csv-rows.json');
    const runs = [];
    for (const web of [0, 1]) {
      const started = await call(web, `/agents/${csvAgent}/run`, {
        input: `invoice,vendor,amount\nINV-${web},Acme,12.5`,
      });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      runs.push(started.body.id as string);
    }
    for (const runId of runs) {
      const run = await ended(runId);
      assert.equal(run.status, 'completed');
      assert.equal(run.counts.done, 1);
      assert.equal(Number((await knex('files').where({ run_id: runId }).count({ n: '*' }))[0].n), 1);
    }

    // A micro-batching webhook fed by both web processes at once: each delivery claims its place in the open batch
    // on the same row, concurrently, as only a real PostgreSQL server lets them.
    const agent = await createAgent(
      knex,
      workspaceId,
      agentSpecSchema.parse({ ...spec, nodes: [{ ...spec.nodes[0], format: 'json' }, ...spec.nodes.slice(1)] }),
    );
    await knex('agents').where({ id: agent.id }).update({ state: 'live' });
    const hook = await call(0, `/agents/${agent.id}/triggers`, {
      kind: 'webhook',
      batch: { max_wait_ms: 1500, max_items: 50 },
    });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    const secret = Buffer.from((hook.body.secret as string).slice('whsec_'.length), 'base64');
    const deliveries = 200;
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let i = next++; i < deliveries; i = next++) {
          const body = JSON.stringify({ invoice: `B-${i}`, vendor: 'Acme', amount: 10 });
          const id = `msg_${i}_${randomUUID()}`;
          const ts = Math.floor(Date.now() / 1000);
          const mac = createHmac('sha256', secret).update(`${id}.${ts}.${body}`).digest('base64');
          const res = await fetch(`${cluster.webs[i % 2].url}/v1/hooks/${hook.body.id}`, {
            method: 'POST',
            headers: { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${mac}` },
            body,
          });
          assert.equal(res.status, 202, await res.clone().text());
        }
      }),
    );
    const batchRuns = await until('every delivery in an ended run', async () => {
      const rows = await knex('runs').where({ agent_id: agent.id }).select('id', 'status', 'total');
      const done = rows.filter((r) => r.status === 'completed').reduce((n, r) => n + r.total, 0);
      return done === deliveries && rows.every((r) => r.status === 'completed') ? rows : undefined;
    });
    assert.ok(
      batchRuns.every((r) => r.total <= 50),
      'no batch beyond max_items',
    );
    const invoices = (
      await knex('run_items')
        .whereIn(
          'run_id',
          batchRuns.map((r) => r.id),
        )
        .select(knex.raw("data->>'invoice' as invoice"))
    ).map((r: { invoice: string }) => r.invoice);
    assert.equal(invoices.length, deliveries);
    assert.equal(new Set(invoices).size, deliveries, 'each delivery is one item, in one run');
  });

  it("a run stored by a web process that died before sending its start is started by the web processes' sweep", async () => {
    const agentId = await live('route-csv-rows.json');
    const workspace = (await knex('workspaces').where({ id: workspaceId }).first())!;
    const agent = (await getAgent(knex, workspaceId, agentId))!;
    // What POST /run leaves when its process is killed between storing the run and sending the start.
    const opened = await openRun(knex, {
      workspace,
      agent,
      input: 'invoice,vendor,amount\nINV-9,Acme,12.5',
      trigger: 'api',
      startPending: true,
    });
    assert.equal(opened.outcome, 'created');
    const runId = opened.outcome === 'created' ? opened.run.id : assert.fail();
    const run = await ended(runId);
    assert.equal(run.status, 'completed');
    assert.equal(run.counts.done, 1);
  });

  it('a per-key rate limit is one budget across both web processes', async () => {
    const { key: fresh } = await createApiKey(knex, workspaceId, 'rate key', ['read']);
    // 5 a second in bursts of 50: 80 requests alternating between the two let about 50 through, not 80.
    let ok = 0;
    for (let i = 0; i < 80; i++) if ((await call(i % 2, '/agents', undefined, fresh)).status === 200) ok++;
    assert.ok(ok >= 50 && ok < 65, `${ok} of 80 let through (per process it would be all 80)`);
  });

  it('sign-in throttles count failures on either web process: the sixth wrong password is refused by both', async () => {
    const person = new Person(cluster.webs[0].url);
    assert.equal((await person.signUp()).status, 201);
    const login = (web: number, password: string) =>
      fetch(`${cluster.webs[web].url}/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: person.email, password }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await login(i % 2, `wrong password ${i}`)).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429], 'five failures per address, wherever they land');
    for (const web of [0, 1]) {
      const right = await login(web, person.password);
      assert.equal(right.status, 429, 'even the right password waits out the throttle, on either process');
      assert.ok(Number(right.headers.get('retry-after')) > 0);
    }
  });

  it('a form takes ten submissions a minute from a client, counted across both web processes', async () => {
    const agentId = await live('running-total.json');
    const form = await call(0, `/agents/${agentId}/triggers`, {
      kind: 'form',
      title: 'Order',
      fields: [{ name: 'order', label: 'Order', type: 'text', required: true }],
    });
    assert.equal(form.status, 201, JSON.stringify(form.body));
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${cluster.webs[i % 2].url}/v1/forms/${form.body.id}/submissions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({}), // invalid: counted, and starts no run
      });
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [...Array(10).fill(422), 429, 429]);
  });

  it('SIGKILL of one worker during a 20,000-item run: the other finishes it, every item counted once', async () => {
    const agentId = await live('running-total.json');
    const runId = await startOrders(agentId, 20_000);
    await until('the items', async () => ((await call(1, `/runs/${runId}`)).body.counts.total > 0 ? true : undefined));
    await cluster.workers[0].stop('SIGKILL');
    const run = await ended(runId);
    assert.equal(run.status, 'completed');
    assert.deepEqual([run.counts.done, run.counts.failed], [20_000, 0]);
    assert.equal(await ordersSeen(agentId), 20_000);
    cluster.workers[0].restart();
  });

  it('live progress (server-sent events) of a run started on one web process streams from the other', async () => {
    const agentId = await live('running-total.json');
    const runId = await startOrders(agentId, 3_000);
    const res = await fetch(`${cluster.webs[1].url}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await res.text(); // the stream ends after its `end` event
    const events = [...text.matchAll(/^event: (\w+)\ndata: (.*)$/gm)].map((m) => ({
      kind: m[1],
      data: JSON.parse(m[2]),
    }));
    const progress = events.filter((e) => e.kind === 'progress');
    assert.ok(progress.length >= 1, text.slice(0, 500));
    assert.equal(progress.at(-1)!.data.counts.done, 3_000);
    assert.deepEqual(events.at(-1), { kind: 'end', data: { status: 'completed' } });
  });

  it('webhooks and forms are accepted by either web process; a delivery resent to the other starts nothing', async () => {
    const agentId = await live('running-total.json');
    const hook = await call(0, `/agents/${agentId}/triggers`, { kind: 'webhook' });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    const secret = Buffer.from((hook.body.secret as string).slice('whsec_'.length), 'base64');
    const deliver = (web: number, id: string, body: string) => {
      const ts = Math.floor(Date.now() / 1000);
      const signature = 'v1,' + createHmac('sha256', secret).update(`${id}.${ts}.${body}`).digest('base64');
      return fetch(`${cluster.webs[web].url}/v1/hooks/${hook.body.id}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(ts),
          'webhook-signature': signature,
        },
        body,
      });
    };
    const runs: string[] = [];
    for (const web of [0, 1]) {
      const id = `msg_${randomUUID()}`;
      const body = JSON.stringify({ order: `W-${web}`, quantity: 1 });
      const first = await deliver(web, id, body);
      assert.equal(first.status, 202, await first.clone().text());
      runs.push(((await first.json()) as Json).run_id);
      const resent = await deliver(1 - web, id, body); // the same delivery, to the other process
      assert.notEqual(resent.status, 202, 'a resent delivery must not start a second run');
    }
    const form = await call(1, `/agents/${agentId}/triggers`, {
      kind: 'form',
      title: 'Order',
      fields: [
        { name: 'order', label: 'Order', type: 'text', required: true },
        { name: 'quantity', label: 'Quantity', type: 'number', required: true },
      ],
    });
    assert.equal(form.status, 201, JSON.stringify(form.body));
    for (const web of [0, 1]) {
      const res = await fetch(`${cluster.webs[web].url}/v1/forms/${form.body.id}/submissions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ order: `F-${web}`, quantity: 2 }),
      });
      assert.equal(res.status, 202, await res.clone().text());
      runs.push(((await res.json()) as Json).run_id);
    }
    for (const runId of runs) assert.equal((await ended(runId)).status, 'completed');
    assert.equal(await ordersSeen(agentId), 4);
  });

  it('a schedule fires once per tick although both web processes reconcile schedules as they start', async () => {
    const agentId = await live('running-total.json');
    const trigger = await call(0, `/agents/${agentId}/triggers`, {
      kind: 'schedule',
      schedule: { type: 'interval', every: 2, unit: 'seconds' },
    });
    assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
    // Both web processes restart at once, each reconciling every schedule with the database as it starts.
    await Promise.all(cluster.webs.map((w) => w.process.stop('SIGTERM')));
    for (const w of cluster.webs) w.process.restart();
    await Promise.all(cluster.webs.map((w) => cluster.webReady(w.url)));
    const scheduled = async () =>
      (await call(1, `/runs?agent_id=${agentId}&trigger=schedule&limit=500`)).body.data as Json[];
    await until('six scheduled runs', async () => ((await scheduled()).length >= 6 ? true : undefined), 120_000);
    assert.equal((await call(0, `/agents/${agentId}/state`, { state: 'paused' })).status, 200);

    const runs = await scheduled();
    const fires = runs.map((r) => r.fired_at as string);
    assert.equal(new Set(fires).size, fires.length, `one run per fire time: ${fires.sort().join(', ')}`);
    const schedules: string[] = [];
    const temporal = await connectTemporal(loadTemporalConfig({ TEMPORAL_ADDRESS: cluster.temporalAddress }));
    for await (const s of temporal.client.schedule.list()) {
      if (s.scheduleId.startsWith(`agent-${agentId}-`)) schedules.push(s.scheduleId);
    }
    await temporal.connection.close();
    assert.deepEqual(schedules, [trigger.body.schedule.schedule_id]);
  });

  it('SIGKILL of one web process: the other keeps serving the API and the console to the same session', async () => {
    const person = new Person(cluster.webs[0].url);
    assert.equal((await person.signUp({ workspace_name: 'Failover Ltd' })).status, 201);
    assert.equal(
      (
        await person.call('/agents', {
          json: JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples/route-csv-rows.json'), 'utf8')),
        })
      ).status,
      201,
    );
    await cluster.webs[0].process.stop('SIGKILL');
    await assert.rejects(fetch(`${cluster.webs[0].url}/readyz`), 'web A is gone');

    const onB = new Person(cluster.webs[1].url, person.email);
    onB.cookies = person.cookies;
    onB.csrf = person.csrf;
    const me = await onB.call('/me');
    assert.equal(me.status, 200);
    assert.equal(me.body.workspace.name, 'Failover Ltd');
    const cookie = [...person.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const page = await fetch(`${cluster.webs[1].url}/agents`, { headers: { cookie } });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /Route invoice rows/, 'the agents page lists the agent, server-rendered');

    cluster.webs[0].process.restart();
    await cluster.webReady(cluster.webs[0].url);
  });

  it('the Temporal server restarted mid-run: the run completes, every item counted once', async () => {
    const agentId = await live('running-total.json');
    const runId = await startOrders(agentId, 20_000);
    await midRun(runId);
    await cluster.temporal.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 2000));
    cluster.temporal.restart();
    const run = await ended(runId);
    assert.equal(run.status, 'completed', run.error);
    assert.deepEqual([run.counts.done, run.counts.failed], [20_000, 0]);
    assert.equal(await ordersSeen(agentId), 20_000);
  });

  it('PostgreSQL crashed and restarted mid-run: the run completes and no acknowledged write is lost', async () => {
    const agentId = await live('running-total.json');
    const other = await live('route-csv-rows.json');
    const runId = await startOrders(agentId, 20_000);
    // Writes through the API while the database goes down: each one answered 2xx must be there afterwards.
    const acknowledged = new Map<string, number>();
    const { key: writerKey } = await createApiKey(knex, workspaceId, 'writer', ['manage']); // a budget of its own
    let restarted = false;
    let afterRestart = 0;
    const writer = (async () => {
      for (let i = 0; !restarted || afterRestart < 8; i++) {
        const res = await call(i % 2, `/agents/${other}/state-store/k${i}`, { value: i }, writerKey, 'PUT').catch(
          () => undefined,
        );
        if (res && res.status < 300) {
          acknowledged.set(`k${i}`, i);
          if (restarted) afterRestart++;
        }
        await new Promise((r) => setTimeout(r, 250)); // within the key's 5 requests a second
      }
    })();
    await midRun(runId);
    await cluster.postgres.stop('SIGQUIT'); // immediate shutdown: no checkpoint, as after a crash
    const before = acknowledged.size;
    await new Promise((r) => setTimeout(r, 2000));
    cluster.postgres.restart();
    restarted = true;
    const run = await ended(runId);
    await writer;
    assert.equal(run.status, 'completed', run.error);
    assert.deepEqual([run.counts.done, run.counts.failed], [20_000, 0]);
    assert.equal(await ordersSeen(agentId), 20_000);
    assert.ok(before > 0, 'writes were acknowledged before the crash');
    const rows = await knex('agent_state').where({ agent_id: other }).select('key', 'value');
    const stored = new Map(
      rows.map((r) => [r.key as string, Number(typeof r.value === 'string' ? JSON.parse(r.value) : r.value)]),
    );
    const lost = [...acknowledged].filter(([k, v]) => stored.get(k) !== v).map(([k]) => k);
    assert.deepEqual(lost, [], 'acknowledged writes missing after the restart');
  });
});
