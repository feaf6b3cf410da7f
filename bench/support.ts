// What the benchmarks share: load from concurrent callers over keep-alive HTTP, CPU meters read from /proc, the
// processes they start, and the raw-Temporal baseline (one trivial activity per workflow) they compare against.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { spawnDetached } from '../scripts/priority';
import { waitFor } from '../scripts/supervisor';
import { stopWithStack } from '../test/support/global';

export const root = path.resolve(__dirname, '..');

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const statOf = (pid: number | string) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');

/** CPU time a process has used, in ms (utime + stime from /proc, in clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const fields = statOf(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * CPU time of a process and its children, in ms: a PostgreSQL server is a postmaster and a backend per connection
 * (each in a session of its own, so not one process group). Children that have ended count through the parent's
 * cutime and cstime; live ones are summed.
 */
export function treeCpuMs(pid: number): number {
  const own = statOf(pid);
  let total = (Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) * 10;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = statOf(entry);
      if (Number(fields[1]) === pid) total += (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // gone since the listing
    }
  }
  return total;
}

/** Starts counting the CPU of each named process (or process group); the result divides by `per`. */
export function cpuMeter(pids: Record<string, number>, measure: (pid: number) => number = cpuMs) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, measure(pid)]));
  return (per: number) =>
    Object.fromEntries(
      Object.entries(pids).map(([k, pid]) => [k, Number(((measure(pid) - before[k]) / per).toFixed(2))]),
    );
}

export interface Latency {
  p50: number;
  p99: number;
}
const latencyOf = (times: number[]): Latency => {
  times.sort((a, b) => a - b);
  return { p50: Number(percentile(times, 50).toFixed(1)), p99: Number(percentile(times, 99).toFixed(1)) };
};

/** `calls` calls of `fn` from `connections` concurrent callers (closed loop); the latency of each. */
export async function burst(calls: number, fn: (i: number) => Promise<unknown>, connections = 10): Promise<Latency> {
  const times: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (let i = next++; i < calls; i = next++) {
        const t = performance.now();
        await fn(i);
        times.push(performance.now() - t);
      }
    }),
  );
  return latencyOf(times);
}

/** Open loop: `rate` calls a second for `seconds`, whatever the answers, as independent clients would send them. */
export async function openLoop(rate: number, seconds: number, fn: () => Promise<unknown>): Promise<Latency> {
  const times: number[] = [];
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t = performance.now();
    pending.push(fn().then(() => void times.push(performance.now() - t)));
  }
  await Promise.all(pending);
  return latencyOf(times);
}

// The processes run detached, as `npm start` runs them; a Ctrl-C must still end the benchmark through its exit
// handlers, which stop them (stopWithStack).
process.once('SIGINT', () => process.exit(130));

/**
 * A script of this project in a process of its own, as `npm start` runs it: in a session of its own, and at
 * background priority for the work that can wait in a queue (the worker; scripts/priority.ts).
 */
export function spawnProcess(
  script: string,
  env: NodeJS.ProcessEnv,
  log: string,
  { background = false } = {},
): ChildProcess {
  const out = fs.openSync(log, 'a');
  const child = spawnDetached(
    process.execPath,
    ['--import', 'tsx', script],
    { cwd: root, env, stdio: ['ignore', out, out] },
    background,
  );
  fs.closeSync(out); // the child has its own copy
  stopWithStack(child);
  return child;
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/**
 * POST JSON over a keep-alive agent with node:http (fetch spent 1.1 ms of CPU per call where node:http spends 0.4,
 * and the load generator shares the machine with what it measures); resolves with 202, rejects on anything else.
 */
export function post(
  agent: http.Agent,
  url: string,
  headers: Record<string, string>,
  body: string,
  retried = false,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 202
            ? resolve(202)
            : reject(new Error(`POST ${url} answered ${res.statusCode}: ${Buffer.concat(chunks)}`)),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed while idle (its keepAliveTimeout) as this request reused it: the
      // request never reached the server, so it is sent once more on a new socket (as Node's documentation advises).
      if (req.reusedSocket && err.code === 'ECONNRESET' && !retried) resolve(post(agent, url, headers, body, true));
      else reject(err);
    });
    req.end(body);
  });
}

/**
 * Waits until every run of the agent has had its workflow start land in Temporal (services/runs/dispatch.ts marks them).
 * Runs are answered before their workflow starts: a phase timed to its last answer must still wait for this, or
 * Temporal's share of its starts would land in the next phase (the raw baseline's) and its CPU meter.
 */
export async function waitForStartsLanded(knex: Knex, agentId: string, timeoutMs = 300_000): Promise<void> {
  await waitFor(
    'the run starts to land in Temporal',
    async () => {
      const [{ n }] = await knex('runs')
        .where({ agent_id: agentId, start_pending: true })
        .count<{ n: number }[]>('* as n');
      if (Number(n) > 0) throw new Error(`${n} runs not started yet`);
    },
    timeoutMs,
  );
}

/** Polls the runs table until `count` runs of the agent ended; timings of the runs created since `from`. */
export async function waitForEnded(knex: Knex, agentId: string, count: number, timeoutMs: number, from = new Date(0)) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await knex('runs')
      .where({ agent_id: agentId })
      .first(
        knex.raw('count(*) filter (where ended_at is not null)::int as ended'),
        knex.raw(
          `extract(epoch from (max(ended_at) filter (where created_at >= ?) - min(created_at) filter (where created_at >= ?)))::float8 as seconds`,
          [from, from],
        ),
        knex.raw(
          `(extract(epoch from max(started_at - created_at) filter (where created_at >= ?)) * 1000)::float8 as queue_wait_ms`,
          [from],
        ),
        knex.raw(`count(*) filter (where status not in ('completed', 'running'))::int as unexpected`),
      );
    if (row.ended >= count)
      return {
        seconds: row.seconds as number,
        queueWaitMs: row.queue_wait_ms as number,
        unexpected: row.unexpected as number,
      };
    if (Date.now() > deadline) throw new Error(`only ${row.ended} of ${count} runs ended in time`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The engine's own limit: `runs` workflows of one trivial activity each, started by 10 concurrent callers of the
 * Temporal client, timed until all closed, with `workers` baseline workers in processes of their own.
 */
export async function rawRuns(opts: {
  client: Client;
  runs: number;
  env: NodeJS.ProcessEnv;
  address: string;
  logDir: string;
  temporalPid: number;
  workers?: number;
  /** Measures the Temporal server's CPU (a group for a server with processes of its own). */
  measure?: (pid: number) => number;
}) {
  const taskQueue = `bench-raw-${randomUUID()}`;
  const workers = Array.from({ length: opts.workers ?? 1 }, (_, i) => {
    const log = path.join(opts.logDir, `baseline-worker-${i + 1}.log`);
    const child = spawnProcess(
      'bench/baseline-worker.ts',
      { ...opts.env, TEMPORAL_ADDRESS: opts.address, BASELINE_TASK_QUEUE: taskQueue },
      log,
      { background: true }, // as Cadre's worker
    );
    return { child, log };
  });
  for (const w of workers) {
    await waitFor(
      'the baseline worker',
      async () => {
        if (!fs.readFileSync(w.log, 'utf8').includes('baseline worker ready')) throw new Error('not ready');
      },
      120_000,
    );
  }
  const start = (i: number, prefix: string) =>
    opts.client.workflow.start('baselineOneActivity', { taskQueue, workflowId: `${prefix}-${i}`, args: [i] });
  const closed = (prefix: string, n: number) =>
    Promise.all(Array.from({ length: n }, (_, i) => opts.client.workflow.getHandle(`${prefix}-${i}`).result()));
  const warm = 50;
  const warmId = `warm-${randomUUID()}`;
  await burst(warm, (i) => start(i, warmId));
  await closed(warmId, warm);

  const pids = Object.fromEntries(workers.map((w, i) => [`worker${workers.length > 1 ? i + 1 : ''}`, w.child.pid!]));
  const meter = cpuMeter({ bench: process.pid, ...pids });
  const temporalMeter = cpuMeter({ temporal: opts.temporalPid }, opts.measure);
  const prefix = `raw-${randomUUID()}`;
  const t0 = performance.now();
  const starts = await burst(opts.runs, (i) => start(i, prefix));
  const startSeconds = (performance.now() - t0) / 1000;
  await closed(prefix, opts.runs); // the last to close sets the time
  const seconds = (performance.now() - t0) / 1000;
  const cpu = { ...meter(opts.runs), ...temporalMeter(opts.runs) };
  await Promise.all(workers.map((w) => stop(w.child)));
  return { starts, startSeconds, seconds, cpu };
}
