// Prometheus metrics against a real Prometheus: it scrapes the web's /metrics, a worker process's Cadre metrics and
// the same worker's Temporal SDK exporter every second, while a burst of runs goes through the API; PromQL through
// its HTTP API then gives the figures the API reports. promtool's linter passes on every exposition.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  spawnWorker,
  startApi,
  type Harness,
} from '../support/harness';
import { checkedFetch } from '../support/openapi-check';
import { freePort } from '../support/ports';
import { promtoolCheckMetrics, startPrometheus, type Prometheus, type Sample } from '../support/prometheus';
import { reply, startFakeAnthropic, text, type FakeAnthropic } from '../fakes/anthropic';
import { countRunStartBacklog, metricsRegistry } from '../../services/telemetry/metrics';
import { countRunsAwaitingStart } from '../../db/open-run';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const runDurationBuckets = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, Infinity];

describe('Prometheus metrics', () => {
  const token = randomBytes(24).toString('hex');
  let h: Harness;
  let fake: FakeAnthropic;
  let worker: ChildProcess;
  let api: { url: string; close(): Promise<void> };
  let prometheus: Prometheus;
  let key: string;
  let workspaceId: string;
  const endpoints = { web: '', worker: '', temporal: '' };

  before(async () => {
    fake = await startFakeAnthropic((_body, index) =>
      reply([text(`summary ${index}`)], { usage: { input_tokens: 120 + index, output_tokens: 30 } }),
    );
    h = await createHarness({ worker: false }); // the worker is a process of its own, with its own metrics
    const [workerPort, temporalPort] = [await freePort(), await freePort()];
    worker = spawnWorker(h, {
      CADRE_METRICS_TOKEN: token,
      CADRE_WORKER_METRICS_PORT: String(workerPort),
      CADRE_TEMPORAL_METRICS_PORT: String(temporalPort),
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_UNAVAILABLE_RETRIES: '0',
      CADRE_HTTP_ALLOW_HOSTS: '127.0.0.1',
    });
    // This web process is mocha's, whose registry earlier suites' in-process workers and APIs counted into: the
    // figures below are this suite's alone, as a fresh web process's would be.
    metricsRegistry.resetMetrics();
    api = await startApi(h, { metricsToken: token });
    // The web process's backlog source, as scripts/web.ts sets it.
    countRunStartBacklog(() => countRunsAwaitingStart(h.stack.knex, 10));
    const t = await createTestWorkspace(h);
    [key, workspaceId] = [t.key, t.workspace.id];
    endpoints.web = api.url.replace('http://', '');
    endpoints.worker = `127.0.0.1:${workerPort}`;
    endpoints.temporal = `127.0.0.1:${temporalPort}`;
    prometheus = await startPrometheus([
      { name: 'cadre-web', target: endpoints.web, token },
      { name: 'cadre-worker', target: endpoints.worker, token },
      { name: 'temporal-worker', target: endpoints.temporal },
    ]);
    // The worker process is ready once Prometheus sees every target up.
    await eventually('up', (s) => s.length === 3 && s.every((x) => x.value === 1));
  });
  after(async () => {
    await prometheus?.close();
    if (worker && worker.exitCode === null) {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
    }
    await api?.close();
    await h?.close();
    await fake?.close();
  });

  /** Polls a PromQL query until `accept` holds for its samples (Prometheus scrapes every second). */
  async function eventually(promql: string, accept: (s: Sample[]) => boolean, timeoutMs = 60_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const samples = await prometheus.query(promql);
      if (accept(samples)) return samples;
      if (Date.now() > deadline)
        throw new Error(`${promql} did not reach the expected value; it is ${JSON.stringify(samples)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const byLabels = (samples: Sample[], ...labels: string[]) =>
    Object.fromEntries(samples.map((s) => [labels.map((l) => s.metric[l]).join('/'), s.value]));
  const scalar = (samples: Sample[]) => (samples.length === 1 ? samples[0].value : NaN);

  const call = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    checkedFetch(`${api.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, ...(init.json ? { 'content-type': 'application/json' } : {}) },
      body: init.json ? JSON.stringify(init.json) : undefined,
    });

  it('refuses a scrape without the token (401, problem details) and serves what promtool accepts', async () => {
    const up = await prometheus.query('up');
    assert.deepEqual(Object.keys(byLabels(up, 'job')).sort(), ['cadre-web', 'cadre-worker', 'temporal-worker']);

    for (const endpoint of Object.values(endpoints).slice(0, 2)) {
      for (const authorization of [undefined, 'Bearer wrong-token-of-some-length', `Basic ${token}`]) {
        const res = await fetch(`http://${endpoint}/metrics`, { headers: authorization ? { authorization } : {} });
        assert.equal(res.status, 401, `${endpoint} with ${authorization}`);
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
        const body = (await res.json()) as Json;
        assert.equal(body.code, 'metrics_unauthorized');
        assert.doesNotMatch(await (await fetch(`http://${endpoint}/metrics`)).text(), /cadre_runs/);
      }
    }
    for (const [name, endpoint] of Object.entries(endpoints)) {
      const res = await fetch(`http://${endpoint}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200, name);
      const exposition = await res.text();
      const checked = promtoolCheckMetrics(exposition);
      assert.ok(checked.ok, `promtool check metrics on the ${name} endpoint:\n${checked.output}`);
      assert.match(exposition, name === 'temporal' ? /^temporal_/m : /^# TYPE cadre_runs_ended_total counter$/m);
    }
  });

  it('reports a burst of runs through PromQL as the API reports them', async () => {
    const writer = await createLiveAgent(h, workspaceId, {
      name: 'writer',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'summarize' },
        { kind: 'llm', id: 'summarize', instructions: 'Summarize the item.' },
      ],
      policy: { concurrency: 4 },
    });
    const closedPort = await freePort(); // nothing listens: every call fails
    const caller = await createLiveAgent(h, workspaceId, {
      name: 'caller',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'post' },
        {
          kind: 'tool',
          id: 'post',
          tool: 'http.request',
          arguments: { method: 'POST', url: `http://127.0.0.1:${closedPort}/` },
        },
      ],
    });

    const started: string[] = [];
    const start = async (agentId: string, input: unknown) => {
      const res = await call(`/v1/agents/${agentId}/run`, { method: 'POST', json: { input: JSON.stringify(input) } });
      assert.equal(res.status, 202, await res.clone().text());
      started.push(((await res.json()) as Json).id);
    };
    const startWriters = (from: number) =>
      Array.from({ length: 3 }, (_, i) => start(writer.id, [{ n: from + i }, { n: from + i + 100 }]));
    // Two waves, the second once Prometheus has seen the first end: a series scraped only at its final value has
    // no rate.
    await Promise.all(startWriters(0));
    await eventually(`sum(cadre_runs_ended_total{agent_id="${writer.id}"})`, (s) => scalar(s) === 3);
    await Promise.all([...startWriters(3), ...Array.from({ length: 4 }, (_, i) => start(caller.id, [{ n: i }]))]);

    // What the API reports once every run has ended.
    const runs: Json[] = [];
    for (const id of started) {
      for (;;) {
        const run = (await (await call(`/v1/runs/${id}`)).json()) as Json;
        if (!['running', 'needs_review'].includes(run.status)) {
          runs.push(run);
          break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const count = (f: (r: Json) => boolean) => runs.filter(f).length;
    const sum = (f: (r: Json) => number) => runs.reduce((a, r) => a + f(r), 0);
    assert.equal(
      count((r) => r.agent_id === writer.id && r.status === 'completed'),
      6,
    );
    assert.equal(
      count((r) => r.agent_id === caller.id && r.status === 'failed'),
      4,
    );

    const ended = await eventually(
      'sum by (agent_id, status) (cadre_runs_ended_total)',
      (s) => scalar(s) !== 0 && s.reduce((a, x) => a + x.value, 0) === runs.length,
    );
    assert.deepEqual(byLabels(ended, 'agent_id', 'status'), {
      [`${writer.id}/completed`]: 6,
      [`${caller.id}/failed`]: 4,
    });
    const rate = scalar(await eventually('sum(rate(cadre_runs_ended_total[1m]))', (s) => scalar(s) > 0));
    assert.ok(rate > 0, 'runs end at a rate');

    const opened = await eventually('sum by (agent_id, trigger) (cadre_runs_started_total)', (s) => s.length === 2);
    assert.deepEqual(byLabels(opened, 'agent_id', 'trigger'), { [`${writer.id}/api`]: 6, [`${caller.id}/api`]: 4 });

    const itemsByStatus = byLabels(
      await eventually('sum by (status) (cadre_items_processed_total)', (s) => s.length === 2),
      'status',
    );
    assert.deepEqual(itemsByStatus, { done: sum((r) => r.counts.done), failed: sum((r) => r.counts.failed) });

    // The run duration histogram: its count and sum are the API's durations; its median is in the API's median's bucket.
    const durations = runs.map((r) => r.duration_ms / 1000).sort((a, b) => a - b);
    assert.equal(scalar(await prometheus.query('sum(cadre_run_duration_seconds_count)')), runs.length);
    const durationSum = scalar(await prometheus.query('sum(cadre_run_duration_seconds_sum)'));
    assert.ok(
      Math.abs(durationSum - sum((r) => r.duration_ms / 1000)) < 0.002 * runs.length,
      `histogram sum ${durationSum} s, the API's ${sum((r) => r.duration_ms / 1000)} s`,
    );
    const median = scalar(
      await prometheus.query('histogram_quantile(0.5, sum by (le) (cadre_run_duration_seconds_bucket))'),
    );
    const bucket = runDurationBuckets.findIndex((le) => durations[runs.length / 2 - 1] <= le);
    const [low, high] = [bucket === 0 ? 0 : runDurationBuckets[bucket - 1], runDurationBuckets[bucket]];
    assert.ok(median >= low && median <= high, `median ${median} s within [${low}, ${high}] s (API: ${durations})`);

    // Model tokens and cost by agent and model, as the runs' usage says.
    const tokens = byLabels(
      await eventually('sum by (agent_id, model, type) (cadre_model_tokens_total)', (s) => s.length === 2),
      'agent_id',
      'model',
      'type',
    );
    const model = h.config.model.name;
    assert.deepEqual(tokens, {
      [`${writer.id}/${model}/input`]: sum((r) => r.usage.input_tokens),
      [`${writer.id}/${model}/output`]: sum((r) => r.usage.output_tokens),
    });
    assert.equal(
      sum((r) => r.usage.output_tokens),
      12 * 30,
      'every item made one model call',
    );
    const cost = scalar(await prometheus.query(`sum(cadre_model_cost_usd_total{agent_id="${writer.id}"})`));
    assert.ok(Math.abs(cost - sum((r) => r.usage.cost_usd)) < 1e-9, `cost ${cost}`);

    // Connector calls and errors by kind: the caller's four failed HTTP calls.
    const calls = byLabels(await prometheus.query('sum by (kind) (cadre_connector_calls_total)'), 'kind');
    const errors = byLabels(await prometheus.query('sum by (kind) (cadre_connector_errors_total)'), 'kind');
    assert.deepEqual([calls, errors], [{ http: 4 }, { http: 4 }]);

    // Steps: one settled model step per writer item, one failed tool step per caller item.
    const steps = byLabels(
      await prometheus.query('sum by (kind, outcome) (cadre_step_duration_seconds_count)'),
      'kind',
      'outcome',
    );
    assert.deepEqual(steps, { 'llm/done': 12, 'tool/failed': 4 });

    // The start sweep's backlog is what the database holds (runs earlier suites left unstarted in this database
    // count too: the gauge is read from the database at scrape time).
    const awaitingStart = await countRunsAwaitingStart(h.stack.knex, 10);
    await eventually('max(cadre_run_start_backlog)', (s) => scalar(s) === awaitingStart);

    // Temporal's own worker metrics, from the SDK's exporter: task slots and schedule-to-start latency.
    const slots = await eventually('temporal_worker_task_slots_available', (s) => s.length > 0);
    assert.ok(
      slots.some((s) => s.value > 0),
      'the worker has free slots',
    );
    const scheduleToStart = await eventually(
      'sum(temporal_activity_schedule_to_start_latency_seconds_count)',
      (s) => scalar(s) > 0,
    );
    assert.ok(scalar(scheduleToStart) >= 16, 'every activity task of the burst is in the latency histogram');
  });
  it('counts form deliveries and rate-limit refusals as the API answered them', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'form intake',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'out' },
        { kind: 'output', id: 'out', format: 'csv', file_name: 'claims.csv' },
      ],
    });
    const created = await call(`/v1/agents/${agent.id}/triggers`, {
      method: 'POST',
      json: {
        kind: 'form',
        title: 'Claim',
        fields: [{ name: 'amount', label: 'Amount', type: 'number', required: true }],
      },
    });
    assert.equal(created.status, 201, await created.clone().text());
    const form = (await created.json()) as Json;

    // Two valid submissions, then invalid ones until the form's per-client limit (10 a minute) refuses.
    const answers: number[] = [];
    for (const values of [{ amount: 1 }, { amount: 2 }, ...Array.from({ length: 10 }, () => ({ amount: 'x' }))]) {
      const res = await fetch(`${api.url}/v1/forms/${form.id}/submissions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(values),
      });
      answers.push(res.status);
    }
    const answered = (f: (status: number) => boolean) => answers.filter(f).length;
    assert.equal(
      answered((s) => s === 202),
      2,
    );
    assert.ok(answered((s) => s === 429) > 0, `the limit refused some: ${answers}`);

    const delivered = await eventually(
      'sum by (source, outcome) (cadre_deliveries_total)',
      (x) => x.reduce((a, y) => a + y.value, 0) === answers.length,
    );
    assert.deepEqual(byLabels(delivered, 'source', 'outcome'), {
      'form/accepted': 2,
      'form/rejected': answered((s) => s >= 400),
    });
    const refusals = await eventually('sum by (limit) (cadre_rate_limit_refusals_total)', (x) => x.length > 0);
    assert.deepEqual(byLabels(refusals, 'limit'), { form: answered((s) => s === 429) });
  });
  it('draws the Grafana dashboard from queries Prometheus evaluates, over metrics the processes expose', async () => {
    const dashboard = JSON.parse(
      fs.readFileSync(path.resolve(__dirname, '../../docker/grafana/dashboards/cadre.json'), 'utf8'),
    ) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    assert.ok(exprs.length >= 15);
    // Every metric the exposition declares (a labelled series never observed has no sample, but has its TYPE line).
    const declared = new Set<string>();
    for (const endpoint of [endpoints.web, endpoints.worker]) {
      const res = await fetch(`http://${endpoint}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      for (const m of (await res.text()).matchAll(/^# TYPE (\S+) /gm)) declared.add(m[1]);
    }
    const temporalNames = new Set(
      ((await (await fetch(`${prometheus.url}/api/v1/label/__name__/values`)).json()) as { data: string[] }).data,
    );
    for (const { panel, expr } of exprs) {
      const promql = expr.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '10m').replaceAll('$agent', '.*');
      await prometheus.query(promql); // throws with Prometheus's error for a query it cannot parse
      for (const [name] of promql.matchAll(/\b(?:cadre|temporal)_[a-z_]+/g)) {
        const base = name.replace(/_(bucket|count|sum)$/, '');
        const known = name.startsWith('cadre_') ? declared.has(base) : temporalNames.has(name);
        assert.ok(known, `panel "${panel}" reads ${name}, which no process exposes`);
      }
    }
  });
});
