// `npm run bench:runs`: one-item runs end to end, as event-driven agents start them. N runs (BENCH_RUNS, default
// 1,000) of examples/route-csv-rows.json started through POST /v1/agents/{id}/run from 10 keep-alive connections,
// timed from the first start until the last run ended. In the same process run, the engine's own limit: N raw
// Temporal workflows of one trivial activity each, started by 10 concurrent callers of the Temporal client, timed
// until all closed. Cadre's web and worker and the baseline's worker each run in a process of their own, as in
// production. Then a reviewer's decision to the next step, and events: signed webhook deliveries (BENCH_DELIVERIES,
// default 10,000) from 10 connections to a micro-batching trigger, until every delivery's item is done. Prints
// figures (never asserted), then two JSON lines: the one-item runs, and the deliveries. BENCH_TRACES=jaeger runs
// the web and the worker with tracing on, exporting over OTLP to a real Jaeger (test/support/jaeger.ts), to set
// beside a run without (tracing is off with no OTLP endpoint). BENCH_BASELINE=off leaves out raw Temporal.
import { createHmac, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { mochaGlobalTeardown } from '../test/support/global';
import { createHarness, createLiveAgent, createTestWorkspace, type Harness } from '../test/support/harness';
import { freePort } from '../test/support/ports';
import { startJaeger, type Jaeger } from '../test/support/jaeger';
import { waitFor } from '../scripts/supervisor';
import { burst, cpuMeter, percentile, post, rawRuns, root, spawnProcess, stop, waitForEnded } from './support';

const runs = Number(process.env.BENCH_RUNS ?? 1000);
// Temporal keeps its workflows in a SQLite file, as under `npm start` (the test suites keep them in memory).
process.env.CADRE_TEST_TEMPORAL_FILE ??= '1';
const approvals = Number(process.env.BENCH_APPROVALS ?? 30);
const deliveries = Number(process.env.BENCH_DELIVERIES ?? 10_000);
const traces = process.env.BENCH_TRACES === 'jaeger' ? 'jaeger' : 'off';
const baseline = process.env.BENCH_BASELINE !== 'off';

async function cadreRuns(h: Harness, jaeger: Jaeger | undefined) {
  const { workspace, key } = await createTestWorkspace(h);
  const spec = JSON.parse(fs.readFileSync(path.join(root, 'examples/route-csv-rows.json'), 'utf8'));
  const agent = await createLiveAgent(h, workspace.id, spec);
  const env = {
    ...h.stack.env,
    TEMPORAL_ADDRESS: h.temporalConfig.address,
    TEMPORAL_TASK_QUEUE: h.temporalConfig.taskQueue,
    CADRE_LOG_LEVEL: 'info',
    CADRE_API_RATE_LIMIT: '0',
    CADRE_HTTP_ALLOW_HOSTS: '127.0.0.1', // the approval phase's webhook listens here
    // Tracing off unless measured with it: no endpoint from the bench's own environment either.
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger?.otlpUrl ?? '',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
  };
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const web = spawnProcess('scripts/web.ts', { ...env, CADRE_WEB_PORT: String(port) }, `${h.stack.dataDir}/web.log`);
  const worker = spawnProcess('scripts/worker.ts', env, `${h.stack.dataDir}/worker.log`, { background: true });
  await waitFor(
    'the web process',
    async () => {
      if (!(await fetch(`${url}/readyz`)).ok) throw new Error('not ready'); // a worker polls too (api/readiness.ts)
    },
    180_000,
  );
  await waitFor(
    'the worker',
    async () => {
      const log = fs.readFileSync(`${h.stack.dataDir}/worker.log`, 'utf8');
      if (!log.includes('worker polling')) throw new Error('not polling yet');
    },
    120_000,
  );

  const pool = new http.Agent({ keepAlive: true, maxSockets: 10 });
  const headers = { authorization: `Bearer ${key}` };
  const runUrl = `${url}/v1/agents/${agent.id}/run`;
  const input = (i: number) => JSON.stringify({ input: `invoice,vendor,amount\nINV-${i},Acme,${100 + (i % 500)}.50` });
  // Warm-up (JIT, pools, the worker's first workflow tasks), then wait for it to drain before measuring.
  const warm = 50;
  await burst(warm, (i) => post(pool, runUrl, headers, input(i)));
  await waitForEnded(h.stack.knex, agent.id, warm, 120_000);

  const meter = cpuMeter({
    bench: process.pid,
    web: web.pid!,
    worker: worker.pid!,
    postgres: h.stack.pids.postgres,
    temporal: h.stack.pids.temporal,
  });
  const measuredFrom = new Date();
  const t0 = performance.now();
  const starts = await burst(runs, (i) => post(pool, runUrl, headers, input(warm + i)));
  const startSeconds = (performance.now() - t0) / 1000;
  const ended = await waitForEnded(h.stack.knex, agent.id, warm + runs, 600_000, measuredFrom);
  const cpu = meter(runs);
  // Said at once: a failure in a later phase (approvals, deliveries) must not lose the one-item runs' figures.
  console.log(
    `Cadre: ${runs} one-item runs ended in ${ended.seconds.toFixed(1)} s (${(runs / ended.seconds).toFixed(1)}/s; ` +
      `starts p50 ${starts.p50} ms, p99 ${starts.p99} ms, longest queue wait ${ended.queueWaitMs.toFixed(0)} ms` +
      (ended.unexpected ? `; ${ended.unexpected} runs did not complete` : '') +
      ')',
  );
  const approval = await approvalToNextStep(h, workspace.id, url, key);
  const hooks = await batchedDeliveries(h, workspace.id, url, key, pool, spec);
  pool.destroy();
  await Promise.all([stop(web), stop(worker)]);
  return { starts, startSeconds, ...ended, cpu, approval, hooks };
}

/**
 * Events: signed webhook deliveries from 10 connections to a micro-batching trigger of the same agent (its input
 * read as JSON), timed from the first delivery until every delivery's item is done.
 */
async function batchedDeliveries(
  h: Harness,
  workspaceId: string,
  url: string,
  key: string,
  pool: http.Agent,
  spec: { nodes: { format?: string }[] },
) {
  const jsonSpec = { ...spec, nodes: [{ ...spec.nodes[0], format: 'json' }, ...spec.nodes.slice(1)] };
  const agent = await createLiveAgent(h, workspaceId, jsonSpec);
  const created = await fetch(`${url}/v1/agents/${agent.id}/triggers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'webhook', batch: { max_wait_ms: 500, max_items: 1000 } }),
  });
  const trigger = (await created.json()) as { id: string; secret: string };
  const secret = Buffer.from(trigger.secret.slice('whsec_'.length), 'base64');
  const hookUrl = `${url}/v1/hooks/${trigger.id}`;
  const deliver = (i: number) => {
    const body = JSON.stringify({ invoice: `INV-${i}`, vendor: 'Acme', amount: 100 + (i % 500) });
    const id = `msg_${i}_${randomUUID()}`;
    const ts = Math.floor(Date.now() / 1000);
    const mac = createHmac('sha256', secret).update(`${id}.${ts}.${body}`).digest('base64');
    return post(
      pool,
      hookUrl,
      { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${mac}` },
      body,
    );
  };
  const t0 = performance.now();
  const latency = await burst(deliveries, deliver);
  const acceptSeconds = (performance.now() - t0) / 1000;
  const deadline = Date.now() + 600_000;
  for (;;) {
    const { done } = await h.stack
      .knex('run_items as i')
      .join('runs as r', 'r.id', 'i.run_id')
      .where('r.agent_id', agent.id)
      .whereIn('i.status', ['done', 'failed', 'needs_review'])
      .first(h.stack.knex.raw('count(*)::int as done'));
    if (done >= deliveries) break;
    if (Date.now() > deadline) throw new Error(`only ${done} of ${deliveries} delivered items done in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = (performance.now() - t0) / 1000;
  const { runs: batches } = await h.stack
    .knex('runs')
    .where({ agent_id: agent.id })
    .first(h.stack.knex.raw('count(*)::int as runs'));
  return { seconds, acceptSeconds, latency, batches };
}

/**
 * A reviewer's decision to the next step: runs of an agent whose webhook call waits for approval, one at a time;
 * the time from sending the decision (as the console does, through the API) until the webhook receives the call.
 */
async function approvalToNextStep(h: Harness, workspaceId: string, url: string, key: string) {
  const arrived = new Map<number, number>();
  const sink = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c));
    req.on('end', () => {
      arrived.set(Number((JSON.parse(raw) as { id: number }).id), performance.now());
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const spec = JSON.parse(fs.readFileSync(path.join(root, 'examples/notify-webhook.json'), 'utf8'));
  spec.nodes[2].arguments.url = `http://127.0.0.1:${(sink.address() as { port: number }).port}/hook`;
  const agent = await createLiveAgent(h, workspaceId, spec);
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const times: number[] = [];
  for (let i = 0; i < approvals; i++) {
    const started = await fetch(`${url}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ input: JSON.stringify([{ id: i, amount: 5000 }]) }),
    });
    const run = (await started.json()) as { id: string };
    let approvalId: string | undefined;
    while (!approvalId) {
      const list = (await (await fetch(`${url}/v1/approvals?run_id=${run.id}`, { headers })).json()) as {
        data: { id: string; status: string }[];
      };
      approvalId = list.data.find((a) => a.status === 'pending')?.id;
      if (!approvalId) await new Promise((r) => setTimeout(r, 20));
    }
    const t = performance.now();
    const decided = await fetch(`${url}/v1/approvals/${approvalId}/decision`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ decision: 'approve' }),
    });
    if (decided.status !== 200) throw new Error(`the decision answered ${decided.status}: ${await decided.text()}`);
    while (!arrived.has(i)) await new Promise((r) => setTimeout(r, 2));
    times.push(arrived.get(i)! - t);
  }
  await new Promise((r) => sink.close(r));
  times.sort((a, b) => a - b);
  return { p50: Number(percentile(times, 50).toFixed(1)), p99: Number(percentile(times, 99).toFixed(1)) };
}

async function main() {
  const h = await createHarness({ worker: false });
  const jaeger = traces === 'jaeger' ? await startJaeger(h.stack.dataDir) : undefined;
  process.once('exit', () => jaeger?.child.kill('SIGKILL')); // however the bench ends
  const raw = baseline
    ? await rawRuns({
        client: h.client,
        runs,
        env: h.stack.env,
        address: h.temporalConfig.address,
        logDir: h.stack.dataDir,
        temporalPid: h.stack.pids.temporal,
      })
    : undefined;
  if (raw)
    console.log(
      `raw Temporal: ${runs} one-activity workflows closed in ${raw.seconds.toFixed(1)} s ` +
        `(${(runs / raw.seconds).toFixed(1)}/s; starts p50 ${raw.starts.p50} ms, p99 ${raw.starts.p99} ms)`,
    );
  const cadre = await cadreRuns(h, jaeger);
  console.log(
    jaeger
      ? `traces: on, exported over OTLP to Jaeger, which has spans of ${(await servicesOf(jaeger)).join(', ')}`
      : 'traces: off (no OTLP endpoint)',
  );
  console.log(
    `approval decided → next step started (${approvals} runs one at a time): p50 ${cadre.approval.p50} ms, p99 ${cadre.approval.p99} ms`,
  );
  console.log(
    `events: ${deliveries} signed webhook deliveries to a micro-batching trigger, every item done in ` +
      `${cadre.hooks.seconds.toFixed(1)} s (${(deliveries / cadre.hooks.seconds).toFixed(0)}/s; accepted in ` +
      `${cadre.hooks.acceptSeconds.toFixed(1)} s, p50 ${cadre.hooks.latency.p50} ms, p99 ${cadre.hooks.latency.p99} ms; ` +
      `${cadre.hooks.batches} runs)`,
  );
  console.log(
    `CPU ms per run: Cadre ${JSON.stringify(cadre.cpu)}; raw Temporal ${JSON.stringify(raw?.cpu ?? 'not measured')}`,
  );
  await jaeger?.stop();
  await h.close();
  await mochaGlobalTeardown();
  console.log(
    JSON.stringify({
      runs,
      traces,
      runs_ended_per_s: Number((runs / cadre.seconds).toFixed(1)),
      baseline_ended_per_s: raw && Number((runs / raw.seconds).toFixed(1)),
      ratio: raw && Number((raw.seconds / cadre.seconds).toFixed(2)),
      start_p50_ms: cadre.starts.p50,
      start_p99_ms: cadre.starts.p99,
      baseline_start_p50_ms: raw?.starts.p50,
      baseline_start_p99_ms: raw?.starts.p99,
      max_queue_wait_ms: Math.round(cadre.queueWaitMs),
      approval_to_next_step_p50_ms: cadre.approval.p50,
      approval_to_next_step_p99_ms: cadre.approval.p99,
      cpu_ms_per_run: cadre.cpu,
      baseline_cpu_ms_per_run: raw?.cpu,
    }),
  );
  console.log(
    JSON.stringify({
      deliveries,
      traces,
      deliveries_done_per_s: Number((deliveries / cadre.hooks.seconds).toFixed(1)),
      accept_p50_ms: cadre.hooks.latency.p50,
      accept_p99_ms: cadre.hooks.latency.p99,
      runs: cadre.hooks.batches,
      n8n_executions_per_s_reference: 213,
    }),
  );
}

/** The services Jaeger has spans of: the web's and the worker's when tracing was on. */
async function servicesOf(jaeger: Jaeger): Promise<string[]> {
  return ((await (await fetch(`${jaeger.queryUrl}/api/services`)).json()) as { data: string[] }).data.sort();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
