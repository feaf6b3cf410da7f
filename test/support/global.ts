// Starts, once per `npm test`, the real servers the integration suites use, and stops them at the end.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Knex } from 'knex';
import { databaseUrl, loadConfig, type CadreConfig } from '../../cadre.config';
import { createKnex } from '../../db/knex';
import { migrate } from '../../db/migrate';
import { loadTemporalConfig, type TemporalConfig } from '../../temporal.config';
import { devServerArgs, ensureTemporalCli } from '../../scripts/temporal-cli';
import { spawnDetached } from '../../scripts/priority';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { connectTemporal } from '../../scripts/connections';
import { freePort } from './ports';

export interface TestStack {
  dataDir: string;
  env: NodeJS.ProcessEnv;
  config: CadreConfig;
  temporalConfig: TemporalConfig;
  knex: Knex;
  workflowBundle: WorkflowBundleWithSourceMap;
  /** The servers' process ids, for benchmarks that count the CPU each one spends. */
  pids: { temporal: number; postgres: number };
}

let stack: TestStack | undefined;
const children: ChildProcess[] = [];
const repoRoot = path.resolve(__dirname, '../..');

/** The shared servers; started lazily so unit-only runs (`mocha test/unit`) start nothing. */
let starting: Promise<TestStack> | undefined;
export function testStack(): Promise<TestStack> {
  starting ??= startStack();
  return starting;
}

function startChild(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
  background = false,
): ChildProcess {
  const out = fs.openSync(logFile, 'a');
  const child = spawnDetached(command, args, { cwd: repoRoot, env, stdio: ['ignore', out, out] }, background);
  children.push(child);
  return child;
}

/** A process started beside the stack (a benchmark's web or worker): stopped with it, however this process ends. */
export function stopWithStack(child: ChildProcess): void {
  children.push(child);
}

let runtimeInstalled = false;
/** The SDK's runtime, installed once per mocha process by whichever suite starts a worker first. */
export function installTestRuntime(): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger('WARN') });
  runtimeInstalled = true;
}

let bundling: Promise<WorkflowBundleWithSourceMap> | undefined;
/** The workflows as the worker runs them, bundled once per mocha process. */
export function testWorkflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundling ??= bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quietLogger });
  return bundling;
}

async function startStack(): Promise<TestStack> {
  installTestRuntime();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-test-'));
  const [temporalPort, temporalUiPort, dbPort] = [await freePort(), await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CADRE_DATA_DIR: dataDir,
    CADRE_DB_PORT: String(dbPort),
    CADRE_TEMPORAL_PORT: String(temporalPort),
    CADRE_TEMPORAL_UI_PORT: String(temporalUiPort),
    CADRE_LOG_LEVEL: 'warn',
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
  };
  const config = loadConfig(env);
  const temporalConfig = loadTemporalConfig(env);

  const temporalBin = ensureTemporalCli();
  const temporal = startChild(
    temporalBin,
    devServerArgs({
      port: temporalPort,
      uiPort: temporalUiPort,
      namespace: temporalConfig.namespace,
      logLevel: 'error',
      searchAttributes: temporalConfig.searchAttributes,
      headless: true,
      // Benchmarks measure what `npm start` runs: workflows kept in a SQLite file. Tests keep them in memory.
      dbFile: process.env.CADRE_TEST_TEMPORAL_FILE ? path.join(dataDir, 'temporal.db') : undefined,
    }),
    env,
    path.join(dataDir, 'temporal.log'),
    true, // as under `npm start`, the server yields the CPU to the API (scripts/priority.ts)
  );
  const postgres = startChild(
    process.execPath,
    ['--import', 'tsx', 'scripts/db.ts'],
    env,
    path.join(dataDir, 'db.log'),
  );

  const [workflowBundle] = await Promise.all([
    testWorkflowBundle(),
    waitFor('Temporal dev server', async () => (await connectTemporal(temporalConfig)).connection.close(), 60_000),
    waitFor('embedded Postgres', () => tcpOpen(dbPort), 60_000),
  ]);
  const knex = createKnex(databaseUrl(config), { max: 20 });
  await migrate(knex);
  stack = {
    dataDir,
    env,
    config,
    temporalConfig,
    knex,
    workflowBundle,
    pids: { temporal: temporal.pid!, postgres: postgres.pid! },
  };
  return stack;
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => console.warn(m),
  error: (m: string) => console.error(m),
};

// However mocha ends (a hung pool, an error in teardown), the servers it started must not outlive it.
process.once('exit', () => {
  for (const child of children) {
    try {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

export async function mochaGlobalTeardown(): Promise<void> {
  // A test that failed mid-transaction can leave the pool waiting; stopping the servers must not wait on it.
  if (stack)
    await Promise.race([stack.knex.destroy().catch(() => undefined), new Promise((r) => setTimeout(r, 5_000))]);
  for (const child of children.reverse()) {
    if (child.exitCode !== null) continue;
    const exited = new Promise((r) => child.once('exit', r));
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      continue;
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // exited
    }
  }
  if (stack && !process.env.CADRE_KEEP_TEST_DATA) fs.rmSync(stack.dataDir, { recursive: true, force: true });
}
