// The worker process: runs run workflows and their activities. Scale out by starting more of them against the
// same Temporal namespace and task queue. `npm start` runs it in one process with the web (scripts/embedded-node.ts)
// through startWorker.
import '../services/telemetry/tracing-start'; // first: it instruments http and pg as they load
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig } from '../cadre.config';
import { loadTemporalConfig } from '../temporal.config';
import { createActivities } from '../activities';
import { noModelMessage } from '../activities/llm-step';
import { connectDatabase, connectTemporal } from './connections';
import { main, StartupError } from './fail-fast';
import { nodeScript } from '../node-script';
import { workerPolls } from '../api/readiness';
import { shutdownTracing, tracingWorkerOptions } from '../services/telemetry/tracing';
import { startMetricsServer } from '../services/telemetry/metrics-http';
import { temporalMetricsOptions } from '../services/telemetry/metrics-temporal';

/** Resolves once Temporal lists the worker of `identity` as polling (or after a minute, or if it cannot say). */
async function untilPolling(client: Client, taskQueue: string, identity: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await workerPolls(client, taskQueue, identity).catch(() => true)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Made with the rest of dist/ by scripts/build.cjs, from the same sources, with no interceptor module. */
const prebuiltBundle = path.join(__dirname, '..', 'workflow-bundle.js');

/**
 * The workflow bundle, with the workflow interceptor modules given (the worker ignores its own
 * `interceptors.workflowModules` once it is handed a bundle). The compiled worker with none (tracing off) reads the
 * one made ahead of time; otherwise scripts/bundle-workflows.ts makes it in a process of its own (see there why).
 */
function bundleWorkflows(interceptorModules: string[]): Promise<string> {
  if (interceptorModules.length === 0 && __filename.endsWith('.js') && fs.existsSync(prebuiltBundle))
    return fs.promises.readFile(prebuiltBundle, 'utf8');
  const [command, args] = nodeScript(require.resolve('./bundle-workflows'), ...interceptorModules);
  return new Promise((resolve, reject) =>
    execFile(command, args, { maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) =>
      err
        ? reject(new StartupError(`bundling the workflows failed: ${stderr.trim() || err.message}`))
        : resolve(stdout),
    ),
  );
}

export interface RunningWorker {
  /** Resolves once the worker has stopped (after SIGINT/SIGTERM or `stop`) and its connections are closed. */
  done: Promise<void>;
  /** Stops polling and waits for the tasks in flight to finish or be handed back; resolves with `done`. */
  stop(): Promise<void>;
}

/** Resolves once the worker polls its task queue. */
export async function startWorker(): Promise<RunningWorker> {
  const { interceptors, sinks } = tracingWorkerOptions();
  const bundling = bundleWorkflows(interceptors?.workflowModules ?? []); // meanwhile, the connections
  bundling.catch(() => undefined); // a failed connection is reported first; a failed bundle when awaited below
  const config = loadConfig();
  Runtime.install({
    logger: new DefaultLogger('WARN'), // the SDK's INFO lines (bundler output) drown Cadre's own
    telemetryOptions: temporalMetricsOptions(config.metrics),
  });
  const tc = loadTemporalConfig();
  const db = await connectDatabase(config, { poolMax: 20 });
  const temporal = await connectTemporal(tc); // for call_agent nodes, and to fail fast with one line
  if (!config.model.apiKey) console.log(`model steps are disabled (${noModelMessage}); everything else works`);

  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ address: tc.address, tls: tc.tls, apiKey: tc.apiKey });
  } catch (err) {
    throw new StartupError(`cannot reach Temporal at ${tc.address}: ${(err as Error).message}`);
  }
  const worker = await Worker.create({
    connection,
    namespace: tc.namespace,
    taskQueue: tc.taskQueue,
    workflowBundle: { code: await bundling },
    activities: createActivities({ knex: db.knex, config, temporal: temporal.client }),
    ...tc.worker,
    interceptors: interceptors && { activity: interceptors.activity },
    sinks,
  });
  const { metrics } = config;
  const metricsServer =
    metrics.workerPort === undefined
      ? undefined
      : await startMetricsServer({ host: metrics.host, port: metrics.workerPort, token: metrics.token });
  const running = worker.run(); // returns after SIGINT/SIGTERM, once in-flight tasks are done or handed back
  // Said once Temporal lists this worker among the queue's pollers: `npm start` lowers the worker's priority then
  // (scripts/priority.ts), and the cluster tests and benchmarks wait for it.
  await Promise.race([untilPolling(temporal.client, tc.taskQueue, worker.options.identity), running]);
  console.log(`worker polling task queue "${tc.taskQueue}" on ${tc.address}`);
  const done = running.finally(async () => {
    metricsServer?.close();
    await Promise.allSettled([connection.close(), temporal.connection.close(), db.knex.destroy(), shutdownTracing()]);
  });
  return {
    done,
    stop() {
      // The SDK's own SIGINT/SIGTERM handler may have begun the shutdown already.
      if (worker.getState() === 'RUNNING') worker.shutdown();
      return done;
    },
  };
}

if (require.main === module) main('worker', async () => (await startWorker()).done);
