// Building blocks of integration tests: a worker on its own task queue, a workspace with an API key, the API
// on a free port, and waiting on a run's status — all against the real servers of global.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { createApp, createServer } from '../../api/app';
import { apiAdapters } from '../../scripts/api-adapters';
import { loadSecretBox } from '../../db/secret-box';
import { createLogger, type Logger } from '../../api/logger';
import { startRun } from '../../services/runs/start';
import type { CadreConfig } from '../../cadre.config';
import { createApiKey, type Scope } from '../../db/api-keys';
import { createAgent, getAgent } from '../../db/agents';
import { createWorkspace, setApiEnabled } from '../../db/workspaces';
import type { Plan } from '../../model/plan';
import { agentSpecSchema } from '../../model/agent';
import type { TemporalConfig } from '../../temporal.config';
import { testStack, type TestStack } from './global';
import { connectorLimitsOf } from '../../activities/connectors/opened';
import type { Readiness } from '../../api/readiness';

export interface Harness {
  stack: TestStack;
  config: CadreConfig;
  temporalConfig: TemporalConfig;
  client: Client;
  /** Absent when the test runs its workers elsewhere (for example as child processes). */
  worker?: Worker;
  close(): Promise<void>;
}

export async function createHarness(
  overrides: { config?: Partial<CadreConfig>; worker?: boolean } = {},
): Promise<Harness> {
  const stack = await testStack();
  const config = { ...stack.config, ...overrides.config };
  const temporalConfig = { ...stack.temporalConfig, taskQueue: `test-${randomUUID()}` };
  const connection = await Connection.connect({ address: temporalConfig.address });
  const client = new Client({ connection, namespace: temporalConfig.namespace });
  if (overrides.worker === false) {
    return { stack, config, temporalConfig, client, close: () => connection.close() };
  }
  const nativeConnection = await NativeConnection.connect({ address: temporalConfig.address });
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: temporalConfig.namespace,
    taskQueue: temporalConfig.taskQueue,
    workflowBundle: stack.workflowBundle,
    activities: createActivities({ knex: stack.knex, config, temporal: client }),
    ...temporalConfig.worker,
  });
  const runPromise = worker.run();
  return {
    stack,
    config,
    temporalConfig,
    client,
    worker,
    async close() {
      worker.shutdown();
      await runPromise;
      await nativeConnection.close();
      await connection.close();
    },
  };
}

export async function createTestWorkspace(
  h: Harness,
  opts: { plan?: Plan; apiEnabled?: boolean; scopes?: Scope[] } = {},
) {
  const ws = await createWorkspace(h.stack.knex, `test ${randomUUID().slice(0, 8)}`, opts.plan ?? 'enterprise');
  if (opts.apiEnabled ?? true) await setApiEnabled(h.stack.knex, ws.id, true);
  const { key, record } = await createApiKey(h.stack.knex, ws.id, 'test key', opts.scopes ?? ['run', 'read', 'manage']);
  return { workspace: { ...ws, api_enabled: opts.apiEnabled ?? true }, key, keyRecord: record };
}

export async function createLiveAgent(
  h: Harness,
  workspaceId: string,
  spec: unknown,
  state: 'live' | 'draft' = 'live',
) {
  const agent = await createAgent(h.stack.knex, workspaceId, agentSpecSchema.parse(spec));
  await h.stack.knex('agents').where({ id: agent.id }).update({ state });
  return (await getAgent(h.stack.knex, workspaceId, agent.id))!;
}

/** Starts a run through the same service the API uses. */
export async function startTestRun(h: Harness, workspaceId: string, agentId: string, input: string) {
  const ws = (await h.stack.knex('workspaces').where({ id: workspaceId }).first())!;
  const agent = (await getAgent(h.stack.knex, workspaceId, agentId))!;
  const { run } = await startRun(
    { knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig },
    { workspace: ws, agent, input, trigger: 'manual' },
  );
  return run;
}

/** Polls the run row until `predicate` holds (the tests' only notion of time is "eventually"). */
export async function waitForRun(
  h: Harness,
  runId: string,
  predicate: (run: Record<string, unknown>) => boolean = (r) =>
    ['completed', 'failed', 'cancelled'].includes(String(r.status)),
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await h.stack.knex('runs').where({ id: runId }).first();
    if (predicate(run)) return run;
    if (Date.now() > deadline)
      throw new Error(
        `run ${runId} did not reach the expected state; it is ${JSON.stringify({ status: run.status, done: run.done, failed: run.failed, needs_review: run.needs_review, total: run.total, error: run.error })}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function items(h: Harness, runId: string) {
  return h.stack.knex('run_items').where({ run_id: runId }).orderBy('seq');
}

/** The API on a free port, backed by the harness's Temporal client and task queue. */
export async function startApi(
  h: Harness,
  opts: {
    smtp?: { url?: string; from: string };
    accountRecoverySeconds?: number;
    logger?: Logger;
    apiRateLimit?: number;
    /** Apps given the same scope share their request budgets, as one deployment's web processes do. */
    budgetScope?: string;
    /** Another Temporal client than the harness's (one that cannot reach the server, say). */
    temporal?: Client;
    /** The checks of /readyz (default: all pass). */
    ready?: () => Promise<Readiness>;
    /** Serves GET /metrics for this bearer token (CADRE_METRICS_TOKEN). */
    metricsToken?: string;
  } = {},
): Promise<{ url: string; app: ReturnType<typeof createApp>; close(): Promise<void> }> {
  const app = createApp({
    adapters: apiAdapters(),
    knex: h.stack.knex,
    temporal: opts.temporal ?? h.client,
    temporalConfig: h.temporalConfig,
    links: { publicUrl: 'http://cadre.test', temporal: h.temporalConfig },
    bodyLimit: '64kb',
    // The key the harness's worker opens secrets with (its config's), as one deployment shares one key.
    secrets: loadSecretBox(h.config),
    connectors: connectorLimitsOf(h.config),
    model: h.config.model,
    smtp: opts.smtp,
    inboxDomain: h.config.inbox.domain,
    accountRecoverySeconds: opts.accountRecoverySeconds,
    apiRateLimit: opts.apiRateLimit,
    // Each test app is its own deployment: budgets spent by one suite's requests do not carry into the next.
    budgetScope: opts.budgetScope ?? `${randomUUID()}:`,
    logger: opts.logger ?? createLogger('silent', 'web'),
    versions: { temporal: 'test', postgres: 'test' },
    ready: opts.ready ?? (async () => ({ temporal: true, postgres: true })),
    metricsToken: opts.metricsToken,
  });
  const server: Server = await new Promise((resolve) => {
    const s = createServer(app).listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * scripts/worker.ts as a process of its own on the harness's task queue, as production runs it, so a test can
 * SIGKILL it. Its output is shown when it exits in any other way (or always, with DEBUG_WORKER set).
 */
export function spawnWorker(h: Harness, env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/worker.ts'], {
    cwd: path.resolve(__dirname, '../..'),
    env: {
      ...h.stack.env,
      TEMPORAL_ADDRESS: h.temporalConfig.address,
      TEMPORAL_TASK_QUEUE: h.temporalConfig.taskQueue,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  child.once('exit', (code, signal) => {
    if (signal !== 'SIGKILL' && code !== 0) console.error(`worker exited (${code ?? signal}):\n${output}`);
    if (process.env.DEBUG_WORKER) console.error(output);
  });
  return child;
}
