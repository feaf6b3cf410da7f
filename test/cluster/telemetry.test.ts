// Observability in the production shape (test/cluster/stack.ts): both web processes and both workers export traces
// to one real Jaeger and serve metrics that one real Prometheus scrapes (with the workers' Temporal SDK metrics); a
// burst of runs started on both webs adds up in PromQL to what the API reports, and a run started on one web is one
// trace holding that web's spans and a worker's.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createApiKey } from '../../db/api-keys';
import { createAgent } from '../../db/agents';
import { createKnex } from '../../db/knex';
import { createWorkspace, setApiEnabled } from '../../db/workspaces';
import { agentSpecSchema } from '../../model/agent';
import { waitFor } from '../../scripts/supervisor';
import { freePort } from '../support/ports';
import { jaegerBin, rootsOf, startJaeger, type Jaeger, type JaegerSpan } from '../support/jaeger';
import { prometheusBin, startPrometheus, type Prometheus, type Sample } from '../support/prometheus';
import { startCluster, type Cluster } from './stack';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('Cadre on a cluster, observed: traces in Jaeger and metrics in Prometheus from every process', function () {
  this.timeout(900_000);
  const token = randomBytes(24).toString('hex');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-cluster-telemetry-'));
  let jaeger: Jaeger;
  let cluster: Cluster;
  let prometheus: Prometheus;
  let knex: Knex;
  let key: string;
  let agentId: string;
  /** Each worker's Cadre and Temporal SDK metrics ports, by process name. */
  const workerPorts: Record<string, { cadre: number; temporal: number }> = {};

  before(async function () {
    if (!fs.existsSync(jaegerBin) || !fs.existsSync(prometheusBin)) {
      console.log('    (skipped: run bash scripts/observability-tools.sh to build Jaeger and Prometheus)');
      this.skip();
    }
    jaeger = await startJaeger(dir);
    for (const name of ['worker-1', 'worker-2'])
      workerPorts[name] = { cadre: await freePort(), temporal: await freePort() };
    cluster = await startCluster({
      webEnv: {
        CADRE_API_RATE_LIMIT: '0',
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl,
        OTEL_BSP_SCHEDULE_DELAY: '200',
        CADRE_METRICS_TOKEN: token,
      },
      processEnv: (name) =>
        workerPorts[name]
          ? {
              CADRE_WORKER_METRICS_PORT: String(workerPorts[name].cadre),
              CADRE_TEMPORAL_METRICS_PORT: String(workerPorts[name].temporal),
            }
          : {},
    });
    knex = createKnex(cluster.databaseUrl, { max: 2 });
    const ws = await createWorkspace(knex, 'observed', 'enterprise');
    await setApiEnabled(knex, ws.id, true);
    key = (await createApiKey(knex, ws.id, 'telemetry key', ['run', 'read', 'manage'])).key;
    const spec = agentSpecSchema.parse(
      JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples/route-csv-rows.json'), 'utf8')),
    );
    const agent = await createAgent(knex, ws.id, spec);
    await knex('agents').where({ id: agent.id }).update({ state: 'live' });
    agentId = agent.id;
    // The webs serve /metrics on their API port with the token; each worker on ports of its own.
    prometheus = await startPrometheus([
      ...cluster.webs.map((w, i) => ({ name: `cadre-web-${i}`, target: w.url.replace('http://', ''), token })),
      ...Object.entries(workerPorts).flatMap(([name, ports]) => [
        { name: `cadre-${name}`, target: `127.0.0.1:${ports.cadre}`, token },
        { name: `temporal-${name}`, target: `127.0.0.1:${ports.temporal}` },
      ]),
    ]);
  });
  let failed = false;
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    await prometheus?.close();
    await knex?.destroy();
    const logs = await cluster?.stop({ keepLogs: failed });
    if (logs) console.log(`the cluster's process logs are kept in ${logs}`);
    await jaeger?.stop();
    if (!failed) fs.rmSync(dir, { recursive: true, force: true });
  });

  const call = async (web: number, url: string, json?: unknown) => {
    const res = await fetch(`${cluster.webs[web].url}/v1${url}`, {
      method: json === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const startRun = async (web: number, i: number) => {
    const started = await call(web, `/agents/${agentId}/run`, {
      input: `invoice,vendor,amount\nINV-${i},Acme,${100 + i}`,
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    return started.body.id as string;
  };
  const ended = (runId: string) =>
    waitFor(
      `run ${runId} to end`,
      async () =>
        assert.ok(['completed', 'failed', 'cancelled'].includes((await call(1, `/runs/${runId}`)).body.status)),
      300_000,
    );
  /** Polls a PromQL query until `accept` holds for its samples (Prometheus scrapes every second). */
  async function eventually(promql: string, accept: (s: Sample[]) => boolean) {
    let samples: Sample[] = [];
    await waitFor(
      promql,
      async () => {
        samples = await prometheus.query(promql);
        assert.ok(accept(samples), `${promql} is ${JSON.stringify(samples)}`);
      },
      120_000,
    );
    return samples;
  }

  it('Prometheus scrapes both webs, both workers and both workers’ Temporal SDK metrics: every target is up', async () => {
    const up = await eventually('up', (s) => s.length === 6 && s.every((x) => x.value === 1));
    assert.deepEqual(up.map((s) => s.metric.job).sort(), [
      'cadre-web-0',
      'cadre-web-1',
      'cadre-worker-1',
      'cadre-worker-2',
      'temporal-worker-1',
      'temporal-worker-2',
    ]);
    // The SDK's own worker metrics, from each worker: task slots and schedule-to-start latency.
    const slots = await eventually('count by (job) (temporal_worker_task_slots_available)', (s) => s.length === 2);
    assert.deepEqual(slots.map((s) => s.metric.job).sort(), ['temporal-worker-1', 'temporal-worker-2']);
  });

  it('a burst of runs started on both webs adds up in Prometheus to what the API reports', async () => {
    const n = 12;
    const runIds = await Promise.all(Array.from({ length: n }, (_, i) => startRun(i % 2, i)));
    for (const id of runIds) await ended(id);
    const listed = (await call(0, `/runs?agent_id=${agentId}&limit=100`)).body.data as { status: string }[];
    const byStatus: Record<string, number> = {};
    for (const r of listed) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    assert.equal(listed.length, n);
    const promql = `sum by (status) (cadre_runs_ended_total{agent_id="${agentId}"})`;
    const sums = await eventually(promql, (s) => s.reduce((a, x) => a + x.value, 0) === n);
    assert.deepEqual(Object.fromEntries(sums.map((s) => [s.metric.status, s.value])), byStatus);
    // Started on both webs: each counted its own.
    const started = await eventually(
      `sum by (job) (cadre_runs_started_total{agent_id="${agentId}"})`,
      (s) => s.reduce((a, x) => a + x.value, 0) === n,
    );
    assert.deepEqual(started.map((s) => [s.metric.job, s.value]).sort(), [
      ['cadre-web-0', n / 2],
      ['cadre-web-1', n / 2],
    ]);
    // The runs' items were done by the workers: both report them between them.
    const items = await prometheus.query(`sum(cadre_items_processed_total{agent_id="${agentId}"})`);
    assert.equal(items[0]?.value, n);
  });

  it('a run started on web A is one trace across processes: the web’s request and a worker’s activities', async () => {
    const runId = await startRun(0, 99);
    await ended(runId);
    const run = (await call(1, `/runs/${runId}`)).body as { status: string; trace_id: string | null };
    assert.equal(run.status, 'completed');
    assert.match(run.trace_id ?? '', /^[0-9a-f]{32}$/);
    // The worker's work on the run: this agent's set-based nodes all run in its opening (a local activity of the
    // run's workflow task, workflows/agent-run.ts), where a model step would be an executeStep activity.
    const isOpening = (s: JaegerSpan) => s.operationName === 'RunActivity:openRun';
    const trace = await jaeger.trace(run.trace_id!, (t) => t.spans.some(isOpening));
    const processOf = (s: JaegerSpan) => trace.processes[s.processID];
    const instanceOf = (s: JaegerSpan) =>
      String(processOf(s).tags.find((t) => t.key === 'service.instance.id')?.value ?? '');
    const [request] = rootsOf(trace);
    assert.deepEqual(
      rootsOf(trace).map((s) => s.operationName),
      ['POST /v1/agents/:id/run'],
    );
    assert.equal(processOf(request).serviceName, 'cadre-web');
    const opening = trace.spans.find(isOpening)!;
    assert.equal(processOf(opening).serviceName, 'cadre-worker');
    assert.ok(instanceOf(request) && instanceOf(opening), 'each process names its instance');
    assert.notEqual(instanceOf(request), instanceOf(opening), 'the trace crosses from the web process to a worker');
    // The web that took the request is web A: its process is the one whose pid the request span's process names.
    const pid = (s: JaegerSpan) => processOf(s).tags.find((t) => t.key === 'process.pid')?.value;
    assert.equal(pid(request), cluster.webs[0].process.child.pid);
    assert.ok(
      cluster.workers.some((w) => w.child.pid === pid(opening)),
      `the run was opened in one of the workers (pid ${String(pid(opening))})`,
    );
  });
});
