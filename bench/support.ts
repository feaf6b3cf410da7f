// What the benchmarks share: load from concurrent callers over keep-alive HTTP, CPU meters read from /proc, the
// processes they start, and the raw-Temporal baseline (one trivial activity per workflow) they compare against.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/common';
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
  await waitForNamespace(opts.client);
  for (const w of workers) await untilReady(w.child, w.log, 'baseline worker ready', 120_000);
  const start = (i: number, prefix: string) =>
    againIfStarved(() =>
      opts.client.workflow
        .start('baselineOneActivity', { taskQueue, workflowId: `${prefix}-${i}`, args: [i] })
        .catch((err) => {
          // A start sent again whose first attempt had landed after all.
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        }),
    );
  const warm = 50;
  const warmId = `warm-${randomUUID()}`;
  await burst(warm, (i) => start(i, warmId));
  await closedOn(opts.client, taskQueue, warm, 600_000);

  const pids = Object.fromEntries(workers.map((w, i) => [`worker${workers.length > 1 ? i + 1 : ''}`, w.child.pid!]));
  const meter = cpuMeter({ bench: process.pid, ...pids });
  const temporalMeter = cpuMeter({ temporal: opts.temporalPid }, opts.measure);
  const prefix = `raw-${randomUUID()}`;
  const startedAt = Date.now();
  const t0 = performance.now();
  const starts = await burst(opts.runs, (i) => start(i, prefix));
  const startSeconds = (performance.now() - t0) / 1000;
  const lastClosed = await closedOn(opts.client, taskQueue, warm + opts.runs, 600_000);
  const seconds = (lastClosed - startedAt) / 1000; // the last to close sets the time, as the server recorded it
  const cpu = { ...meter(opts.runs), ...temporalMeter(opts.runs) };
  await Promise.all(workers.map((w) => stop(w.child)));
  return { starts, startSeconds, seconds, cpu };
}

/** Resolves once the server answers for the client's namespace, before the baseline's worker and starts use it. */
async function waitForNamespace(client: Client): Promise<void> {
  await waitFor(
    `the namespace ${client.options.namespace}`,
    () => client.workflowService.describeNamespace({ namespace: client.options.namespace }),
    120_000,
  );
}

/**
 * Resolves once a spawned process has written `line` to its log; rejects at once, with what it wrote, if it exits
 * first (a worker that failed to start is not a worker still starting).
 */
async function untilReady(child: ChildProcess, log: string, line: string, timeoutMs: number): Promise<void> {
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) =>
      reject(
        new Error(
          `${log} ended (${code ?? signal}) before it was ready:\n${fs.readFileSync(log, 'utf8').slice(-4000)}`,
        ),
      ),
    ),
  );
  exited.catch(() => undefined); // once ready, a later exit (the stop at the end) is no error
  const ready = waitFor(
    path.basename(log, '.log'),
    async () => {
      if (!fs.readFileSync(log, 'utf8').includes(line)) throw new Error('not ready');
    },
    timeoutMs,
  );
  await Promise.race([ready, exited]);
}

/**
 * Waits until `count` workflows of the task queue have closed, by asking the server how many have, every 250 ms (as
 * Cadre's side reads its runs table); resolves with the time the last one closed (ms since the epoch), as the server
 * recorded it. Waiting on each workflow's result instead held one history long-poll per workflow open on the server
 * being measured: a thousand of them on the dev server's SQLite file failed ("GetWorkflowExecution: failed.
 * interrupted") on a loaded machine, and they cost the server CPU that was counted against the baseline.
 */
async function closedOn(client: Client, taskQueue: string, count: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  const query = `TaskQueue = '${taskQueue}' AND ExecutionStatus != 'Running'`;
  for (;;) {
    const { count: closed } = await againIfStarved(() => client.workflow.count(query));
    if (closed >= count) break;
    if (Date.now() > deadline) throw new Error(`only ${closed} of ${count} baseline workflows closed in time`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const closed = await againIfStarved(async () => {
    const all = [];
    for await (const wf of client.workflow.list({ query })) all.push(wf);
    return all;
  });
  const last = Math.max(...closed.map((wf) => wf.closeTime?.getTime() ?? 0));
  const notCompleted = closed
    .filter((wf) => wf.status.name !== 'COMPLETED')
    .map((wf) => `${wf.workflowId}: ${wf.status.name}`);
  if (notCompleted.length > 0)
    throw new Error(`baseline workflows did not complete: ${notCompleted.slice(0, 5).join(', ')}`);
  return last;
}

/**
 * Sends a call to the Temporal server again (for up to a minute) when it answers "namespace not found" for the
 * namespace the baseline has already described. On a machine loaded by other work, the dev server (at background
 * priority, as under `npm start`) is starved: its SQLite reads run past their deadlines and are interrupted, and
 * Temporal 1.29 answers a namespace lookup whose read failed so as "not found"
 * (its log: "GetNamespace operation failed. Error interrupted (9)", then "Namespace default is not found."), which
 * the client, unlike "unavailable", does not retry: one such answer ended bench:runs at a load average of 20 to 35.
 */
async function againIfStarved<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (let wait = 100; ; wait = Math.min(2 * wait, 2_000)) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof NamespaceNotFoundError) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
