// Workflow-level tests (test/workflows/): the real workflow bundle on a worker of its own, against Temporal's
// time-skipping test server (the Java build, fetched by scripts/test-server-tools.sh: the SDK's own download
// cannot work offline) or the project's dev server, with activities replaced by plain functions that record calls.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import fs from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Activities } from '../../activities';
import type { RunPlan } from '../../activities/run-lifecycle';
import { searchAttributes } from '../../temporal.config';
import { devServerDynamicConfig, ensureTemporalCli } from '../../scripts/temporal-cli';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { installTestRuntime, stopWithStack, testWorkflowBundle } from './global';
import { freePort } from './ports';

const testServer = path.resolve(__dirname, '../../.tools/bin/temporal-test-server');

/** What the SDK builds every environment with; private, and the one way to a time-skipping env on our own server. */
type EnvFactory = {
  create(opts: {
    server: { type: 'existing' };
    address: string;
    namespace: string;
    supportsTimeSkipping: boolean;
  }): Promise<TestWorkflowEnvironment>;
};

/**
 * A time-skipping test server of its own: timers of hours pass at once while the test awaits a result or
 * `skipTime`s. Started here rather than by createTimeSkipping(), whose start gives a server 5 s to listen: a JVM
 * on two busy cores takes longer. `teardown()` stops it.
 */
export async function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  if (!fs.existsSync(testServer)) {
    throw new Error(`${testServer} is missing: run 'bash scripts/test-server-tools.sh' (npm test does)`);
  }
  installTestRuntime();
  const port = await freePort();
  const server = spawn(testServer, [String(port)], { stdio: 'ignore', detached: true });
  stopWithStack(server); // however the suite ends, the server does not outlive it
  const stop = () => {
    if (server.exitCode === null && server.signalCode === null) process.kill(-server.pid!, 'SIGKILL');
  };
  try {
    await waitFor("Temporal's test server", () => tcpOpen(port), 60_000);
    const env = await (TestWorkflowEnvironment as unknown as EnvFactory).create({
      server: { type: 'existing' },
      address: `127.0.0.1:${port}`,
      namespace: 'default',
      supportsTimeSkipping: true,
    });
    // Run workflows carry Cadre's search attributes (model/run-identity.ts); the server must know them.
    await env.connection.operatorService.addSearchAttributes({
      namespace: 'default',
      searchAttributes: Object.fromEntries(
        Object.keys(searchAttributes).map((k) => [
          k,
          temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
        ]),
      ),
    });
    const closeConnections = env.teardown.bind(env);
    env.teardown = async () => {
      await closeConnections();
      stop();
    };
    return env;
  } catch (err) {
    stop();
    throw err;
  }
}

/**
 * Skips `duration` of the test server's time. A workflow task or activity under way holds the clock, and so, on
 * the Java test server, can a child left running: then the skip would take real hours, so it fails instead.
 */
export async function skipTime(env: TestWorkflowEnvironment, duration: Duration): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the test server did not skip ${String(duration)}`)), 60_000);
  });
  const sleeping = env.sleep(duration);
  sleeping.catch(() => undefined); // a skip given up on fails later, when the test's server has gone
  try {
    await Promise.race([sleeping, stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The project's dev server (real time), with extra dynamic config: what the test server cannot do, such as
 * suggesting continue-as-new after a few events.
 */
export async function devServerEnv(dynamicConfig: Record<string, string | number> = {}) {
  installTestRuntime();
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: ensureTemporalCli() },
      extraArgs: [
        ...devServerDynamicConfig,
        ...Object.entries(dynamicConfig).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${v}`]),
        ...Object.entries(searchAttributes).flatMap(([k, t]) => ['--search-attribute', `${k}=${t}`]),
      ],
    },
  });
}

type Fake<K extends keyof Activities> = (
  ...args: Parameters<Activities[K]>
) => Awaited<ReturnType<Activities[K]>> | ReturnType<Activities[K]>;
export type FakeActivities = { [K in keyof Activities]?: Fake<K> };

/** Activities as plain functions; every call is recorded with its input, in order. */
export function recordingActivities(fakes: FakeActivities) {
  const calls: { name: string; input: unknown }[] = [];
  const activities = Object.fromEntries(
    Object.entries(fakes).map(([name, fake]) => [
      name,
      async (...args: unknown[]) => {
        calls.push({ name, input: args[0] });
        return (fake as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  );
  /** The inputs of one activity's calls. */
  const inputsOf = <K extends keyof Activities>(name: K) =>
    calls.filter((c) => c.name === name).map((c) => c.input as Parameters<Activities[K]>[0]);
  return { activities, calls, inputsOf };
}

/** A worker on a task queue of its own, running the real workflow bundle. */
export async function workflowWorker(env: TestWorkflowEnvironment, activities: object) {
  const taskQueue = `wf-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace,
    taskQueue,
    workflowBundle: await testWorkflowBundle(),
    activities,
  });
  return { worker, taskQueue };
}

/** The activity types a workflow execution has scheduled so far, in order, from its recorded history. */
export async function scheduledActivities(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

/** A run's plan as the opening hands it to the workflow: one page of `total` items, one at a time. */
export function runPlan(overrides: Partial<RunPlan> = {}): RunPlan {
  return {
    agentId: 'agent-1',
    agentVersion: 1,
    total: 1,
    pageSize: 1_000,
    pageWindow: 1,
    concurrency: 1,
    itemAttempts: 1,
    modelUnavailableRetries: 0,
    stopOnFailure: false,
    approvalTimeoutSeconds: 86_400,
    onApprovalTimeout: 'escalate',
    ...overrides,
  };
}
