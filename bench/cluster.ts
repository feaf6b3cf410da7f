// `npm run bench:cluster`: bench:api's and bench:runs's measurements on the production topology of
// `npm run test:cluster` (the real Temporal server on PostgreSQL, Cadre's PostgreSQL 18 with pgvector, two web
// processes, two workers; test/cluster/stack.ts), each beside its raw-Temporal baseline on the same server in the
// same run. Starts go to both web processes in turn. Prints figures (never asserted), then two JSON lines with the
// keys of bench:api's and bench:runs's, so the topologies compare line by line.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createApiKey } from '../db/api-keys';
import { createAgent } from '../db/agents';
import { createKnex } from '../db/knex';
import { createWorkspace, setApiEnabled } from '../db/workspaces';
import { agentSpecSchema } from '../model/agent';
import { connectTemporal } from '../scripts/connections';
import { loadTemporalConfig } from '../temporal.config';
import { startCluster } from '../test/cluster/stack';
import {
  burst,
  cpuMeter,
  treeCpuMs,
  openLoop,
  post,
  rawRuns,
  root,
  waitForEnded,
  waitForStartsLanded,
} from './support';

const rate = Number(process.env.BENCH_RATE ?? 100); // starts per second in the latency phase
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const runs = Number(process.env.BENCH_RUNS ?? 1000);

async function main() {
  const cluster = await startCluster({ webEnv: { CADRE_API_RATE_LIMIT: '0', CADRE_LOG_LEVEL: 'info' } });
  const knex = createKnex(cluster.databaseUrl, { max: 4 });
  const temporal = await connectTemporal(loadTemporalConfig({ TEMPORAL_ADDRESS: cluster.temporalAddress }));
  try {
    const ws = await createWorkspace(knex, 'bench', 'enterprise');
    await setApiEnabled(knex, ws.id, true);
    const { key } = await createApiKey(knex, ws.id, 'bench', ['run', 'read', 'manage']);
    const spec = agentSpecSchema.parse(
      JSON.parse(fs.readFileSync(path.join(root, 'examples/route-csv-rows.json'), 'utf8')),
    );
    const live = async () => {
      const agent = await createAgent(knex, ws.id, spec);
      await knex('agents').where({ id: agent.id }).update({ state: 'live' });
      return agent.id;
    };
    const pool = new http.Agent({ keepAlive: true, maxSockets: 20 });
    const headers = { authorization: `Bearer ${key}` };
    const input = (i: number) =>
      JSON.stringify({ input: `invoice,vendor,amount\nINV-${i},Acme,${100 + (i % 500)}.50` });
    let turn = 0;
    const startOn = (agentId: string, i: number) =>
      post(pool, `${cluster.webs[turn++ % cluster.webs.length].url}/v1/agents/${agentId}/run`, headers, input(i));
    // Processes by name; PostgreSQL servers with their backends.
    const groups = {
      postgres: cluster.postgres.child.pid!,
      temporal_postgres: cluster.temporalPostgres.child.pid!,
    };
    const nodes = {
      // the workers are added once they run (they are restarted between the phases)
      bench: process.pid,
      ...Object.fromEntries(cluster.webs.map((w, i) => [`web${i + 1}`, w.process.child.pid!])),
      temporal: cluster.temporal.child.pid!,
    };

    // bench:api: starting runs, with the workers stopped (as bench:api runs no worker), then raw client starts.
    const apiAgent = await live();
    await Promise.all(cluster.workers.map((w) => w.stop('SIGTERM')));
    const landed = () => waitForStartsLanded(knex, apiAgent);
    await burst(100, (i) => startOn(apiAgent, i), 20); // warm-up: JIT, pools, caches
    await landed();
    const apiLatency = await openLoop(rate, seconds, () => startOn(apiAgent, 0));
    await landed();
    const rawQueue = `bench-raw-${randomUUID()}`;
    const rawStart = () =>
      temporal.client.workflow.start('baselineRun', {
        taskQueue: rawQueue,
        workflowId: `raw-${randomUUID()}`,
        args: [1, 1],
      });
    await burst(100, rawStart, 20);
    const rawLatency = await openLoop(rate, seconds, rawStart);
    // Starts answered per second; CPU counted until the work they left behind (Cadre's workflow starts) is done.
    const throughput = async (fn: (i: number) => Promise<unknown>, settled?: () => Promise<void>) => {
      const meter = cpuMeter(nodes);
      const pgMeter = cpuMeter(groups, treeCpuMs);
      const t = performance.now();
      await burst(500, fn, 20);
      const perSecond = 500 / ((performance.now() - t) / 1000);
      await settled?.();
      return { perSecond, cpu: { ...meter(500), ...pgMeter(500) } };
    };
    const apiThroughput = await throughput((i) => startOn(apiAgent, i), landed);
    const rawThroughput = await throughput(rawStart);
    console.log(`latency at ${rate}/s for ${seconds} s: API p50 ${apiLatency.p50} ms, p99 ${apiLatency.p99} ms`);
    console.log(`                         raw Temporal p50 ${rawLatency.p50} ms, p99 ${rawLatency.p99} ms`);
    console.log(
      `throughput with 20 callers: API ${apiThroughput.perSecond.toFixed(0)} starts/s, raw Temporal ${rawThroughput.perSecond.toFixed(0)} starts/s`,
    );
    // The runs started so far drain on the workers, then bench:runs measures on a quiet cluster.
    for (const w of cluster.workers) w.restart();
    const queued = await knex('runs').where({ agent_id: apiAgent }).count<{ count: string }[]>('* as count');
    const drainFrom = performance.now();
    await waitForEnded(knex, apiAgent, Number(queued[0].count), 1_800_000);
    console.log(
      `drained ${queued[0].count} queued runs on two workers in ${((performance.now() - drainFrom) / 1000).toFixed(1)} s`,
    );

    // bench:runs: one-item runs end to end against raw one-activity workflows on two baseline workers.
    const raw = await rawRuns({
      client: temporal.client,
      runs,
      env: process.env,
      address: cluster.temporalAddress,
      logDir: cluster.dir,
      temporalPid: cluster.temporal.child.pid!,
      workers: 2,
    });
    const runsAgent = await live();
    const workerPids = Object.fromEntries(cluster.workers.map((w, i) => [`worker${i + 1}`, w.child.pid!]));
    await burst(50, (i) => startOn(runsAgent, i));
    await waitForEnded(knex, runsAgent, 50, 120_000);
    const meter = cpuMeter({ ...nodes, ...workerPids });
    const pgMeter = cpuMeter(groups, treeCpuMs);
    const measuredFrom = new Date();
    const starts = await burst(runs, (i) => startOn(runsAgent, 50 + i));
    const ended = await waitForEnded(knex, runsAgent, 50 + runs, 600_000, measuredFrom);
    const cpu = { ...meter(runs), ...pgMeter(runs) };
    console.log(
      `raw Temporal: ${runs} one-activity workflows closed in ${raw.seconds.toFixed(1)} s (${(runs / raw.seconds).toFixed(1)}/s)`,
    );
    console.log(
      `Cadre: ${runs} one-item runs ended in ${ended.seconds.toFixed(1)} s (${(runs / ended.seconds).toFixed(1)}/s; ` +
        `starts p50 ${starts.p50} ms, p99 ${starts.p99} ms)` +
        (ended.unexpected ? `; ${ended.unexpected} runs did not complete` : ''),
    );
    pool.destroy();
    console.log(
      JSON.stringify({
        topology: 'cluster',
        bench: 'api',
        rate_per_s: rate,
        p50_ms: apiLatency.p50,
        p99_ms: apiLatency.p99,
        baseline_p50_ms: rawLatency.p50,
        baseline_p99_ms: rawLatency.p99,
        starts_per_s: Math.round(apiThroughput.perSecond),
        baseline_starts_per_s: Math.round(rawThroughput.perSecond),
        ratio: Number((apiThroughput.perSecond / rawThroughput.perSecond).toFixed(2)),
        cpu_ms_per_start: apiThroughput.cpu,
        baseline_cpu_ms_per_start: rawThroughput.cpu,
      }),
    );
    console.log(
      JSON.stringify({
        topology: 'cluster',
        bench: 'runs',
        runs,
        runs_ended_per_s: Number((runs / ended.seconds).toFixed(1)),
        baseline_ended_per_s: Number((runs / raw.seconds).toFixed(1)),
        ratio: Number((raw.seconds / ended.seconds).toFixed(2)),
        start_p50_ms: starts.p50,
        start_p99_ms: starts.p99,
        baseline_start_p50_ms: raw.starts.p50,
        baseline_start_p99_ms: raw.starts.p99,
        max_queue_wait_ms: Math.round(ended.queueWaitMs),
        cpu_ms_per_run: cpu,
        baseline_cpu_ms_per_run: raw.cpu,
      }),
    );
  } finally {
    await temporal.connection.close();
    await knex.destroy();
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
