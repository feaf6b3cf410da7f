// `npm run bench:api`: latency and throughput of POST /v1/agents/{id}/run over real HTTP, against raw
// `client.workflow.start` of a trivial workflow on the same Temporal server in the same process run.
// The API runs as in production: its own web process (scripts/web.ts, JSON logs at info level), so the load this
// script generates does not share the API's event loop. Prints figures (never asserted); the last line is one
// JSON object.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { mochaGlobalTeardown } from '../test/support/global';
import { createHarness, createLiveAgent, createTestWorkspace } from '../test/support/harness';
import { freePort } from '../test/support/ports';
import { waitFor } from '../scripts/supervisor';
import { burst as burstOf, cpuMeter, openLoop, spawnProcess, stop, waitForStartsLanded } from './support';

const rate = Number(process.env.BENCH_RATE ?? 100); // starts per second in the latency phases
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const burst = Number(process.env.BENCH_BURST ?? 500); // starts in each throughput phase
const parallel = 20;

/**
 * Closed loop with `parallel` callers: calls answered per second, and the CPU ms per call of each process, counted
 * until `settled` (the work a call leaves behind it) is done.
 */
async function throughput(fn: () => Promise<unknown>, pids: Record<string, number>, settled?: () => Promise<void>) {
  const meter = cpuMeter(pids);
  const t = performance.now();
  await burstOf(burst, fn, parallel);
  const perSecond = burst / ((performance.now() - t) / 1000);
  await settled?.();
  return { perSecond, cpu: meter(burst) };
}

async function main() {
  // No worker: the benchmark measures starting runs, not executing them.
  const h = await createHarness({ worker: false });
  const { workspace, key } = await createTestWorkspace(h);
  const agent = await createLiveAgent(h, workspace.id, {
    name: 'bench',
    nodes: [{ kind: 'input', id: 'in', format: 'lines' }],
  });

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // No per-key request rate: the throughput phases send one key's starts as fast as they are answered.
  const web = spawnProcess(
    'scripts/web.ts',
    { ...h.stack.env, CADRE_WEB_PORT: String(port), CADRE_LOG_LEVEL: 'info', CADRE_API_RATE_LIMIT: '0' },
    path.join(h.stack.dataDir, 'web.log'),
  );
  await waitFor(
    'the web process',
    async () => {
      if (!(await fetch(`${url}/healthz`)).ok) throw new Error('not ready');
    },
    60_000,
  );

  // node:http rather than fetch: the load generator shares the machine's two cores with what it measures, and
  // fetch spent 1.1 ms of CPU per call where node:http spends 0.4.
  const agentPool = new http.Agent({ keepAlive: true, maxSockets: parallel });
  const body = JSON.stringify({ input: 'one item' });
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        `${url}/v1/agents/${agent.id}/run`,
        {
          method: 'POST',
          agent: agentPool,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            res.statusCode === 202
              ? resolve()
              : reject(new Error(`run start answered ${res.statusCode}: ${Buffer.concat(chunks)}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  // One task queue, as every run of the API shares one (a new queue per start costs the server far more).
  const rawQueue = `bench-raw-${randomUUID()}`;
  const rawStart = () =>
    h.client.workflow.start('baselineRun', {
      taskQueue: rawQueue,
      workflowId: `raw-${randomUUID()}`,
      args: [1, 1],
    });
  // Warm up: the web process has just started, and its first seconds (JIT, connection pools, caches) answered
  // 10–20 times slower than the rest; a deployed API serves for days. The same for the raw client.
  const landed = () => waitForStartsLanded(h.stack.knex, agent.id);
  await throughput(start, {}, landed);
  await throughput(rawStart, {});

  const api = await openLoop(rate, seconds, start);
  await landed();
  const raw = await openLoop(rate, seconds, rawStart);
  console.log(`latency at ${rate}/s for ${seconds} s: API p50 ${api.p50} ms, p99 ${api.p99} ms`);
  console.log(`                         raw Temporal p50 ${raw.p50} ms, p99 ${raw.p99} ms`);

  const { temporal, postgres } = h.stack.pids;
  const apiRun = await throughput(start, { bench: process.pid, web: web.pid!, postgres, temporal }, landed);
  const rawRun = await throughput(rawStart, { bench: process.pid, temporal });
  console.log(
    `throughput with ${parallel} callers: API ${apiRun.perSecond.toFixed(0)} starts/s, raw Temporal ${rawRun.perSecond.toFixed(0)} starts/s`,
  );
  console.log(`CPU ms per start: API ${JSON.stringify(apiRun.cpu)}; raw Temporal ${JSON.stringify(rawRun.cpu)}`);

  agentPool.destroy();
  await stop(web);
  await h.close();
  await mochaGlobalTeardown();
  console.log(
    JSON.stringify({
      rate_per_s: rate,
      p50_ms: api.p50,
      p99_ms: api.p99,
      baseline_p50_ms: raw.p50,
      baseline_p99_ms: raw.p99,
      starts_per_s: Math.round(apiRun.perSecond),
      baseline_starts_per_s: Math.round(rawRun.perSecond),
      ratio: Number((apiRun.perSecond / rawRun.perSecond).toFixed(2)),
      cpu_ms_per_start: apiRun.cpu,
      // What the web process alone could take on a core of its own; on this machine it shares two with the rest.
      web_starts_per_core_s: Math.round(1000 / apiRun.cpu.web),
      baseline_cpu_ms_per_start: rawRun.cpu,
    }),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
