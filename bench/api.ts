// `npm run bench:api`: latency and throughput of POST /v1/agents/{id}/run over real HTTP, against raw
// `client.workflow.start` of a trivial workflow on the same Temporal server in the same process run.
// Prints figures (never asserted); the last line is one JSON object.
import { randomUUID } from 'node:crypto';
import { mochaGlobalTeardown } from '../test/support/global';
import { createHarness, createLiveAgent, createTestWorkspace, startApi } from '../test/support/harness';

const rate = Number(process.env.BENCH_RATE ?? 100); // starts per second in the latency phase
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const burst = Number(process.env.BENCH_BURST ?? 500); // starts in the throughput phase
const parallel = 20;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main() {
  // No worker: the benchmark measures starting runs, not executing them.
  const h = await createHarness({ worker: false });
  const api = await startApi(h);
  const { workspace, key } = await createTestWorkspace(h);
  const agent = await createLiveAgent(h, workspace.id, {
    name: 'bench',
    nodes: [{ kind: 'input', id: 'in', format: 'lines' }],
  });
  const start = async () => {
    const t = performance.now();
    const res = await fetch(`${api.url}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'one item' }),
    });
    if (res.status !== 202) throw new Error(`run start answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    return performance.now() - t;
  };
  for (let i = 0; i < 20; i++) await start(); // warm up connections and caches

  // Latency at a fixed arrival rate (open loop: one start every 1/rate s, whatever the answers).
  const latencies: number[] = [];
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(start().then((ms) => void latencies.push(ms)));
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  console.log(
    `latency at ${rate}/s for ${seconds} s: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
  );

  // Throughput, closed loop with `parallel` callers: the API against raw Temporal starts.
  const closedLoop = async (n: number, fn: () => Promise<unknown>) => {
    let next = 0;
    const t = performance.now();
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next++ < n) await fn();
      }),
    );
    return n / ((performance.now() - t) / 1000);
  };
  const apiRate = await closedLoop(burst, start);
  const rawRate = await closedLoop(burst, () =>
    h.client.workflow.start('baselineRun', {
      taskQueue: `bench-raw-${randomUUID()}`,
      workflowId: `raw-${randomUUID()}`,
      args: [1, 1],
    }),
  );
  console.log(
    `throughput with ${parallel} callers: API ${apiRate.toFixed(0)} starts/s, raw Temporal ${rawRate.toFixed(0)} starts/s`,
  );

  await api.close();
  await h.close();
  await mochaGlobalTeardown();
  console.log(
    JSON.stringify({
      rate_per_s: rate,
      p50_ms: Number(percentile(latencies, 50).toFixed(1)),
      p99_ms: Number(percentile(latencies, 99).toFixed(1)),
      starts_per_s: Math.round(apiRate),
      baseline_starts_per_s: Math.round(rawRate),
      ratio: Number((apiRate / rawRate).toFixed(2)),
    }),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
