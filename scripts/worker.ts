// The worker process: runs run workflows and their activities. Scale out by starting more of them against the
// same Temporal namespace and task queue.
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig } from '../cadre.config';
import { loadTemporalConfig } from '../temporal.config';
import { createActivities } from '../activities';
import { noModelMessage } from '../activities/llm-step';
import { connectDatabase, connectTemporal } from './connections';
import { main, StartupError } from './fail-fast';

main('worker', async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') }); // the SDK's INFO lines (bundler output) drown Cadre's own
  const config = loadConfig();
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
    workflowsPath: require.resolve('../workflows'),
    activities: createActivities({ knex: db.knex, config, temporal: temporal.client }),
    ...tc.worker,
  });
  console.log(`worker polling task queue "${tc.taskQueue}" on ${tc.address}`);
  await worker.run(); // returns after SIGINT/SIGTERM, once in-flight tasks are done or handed back
  await Promise.allSettled([connection.close(), temporal.connection.close(), db.knex.destroy()]);
});
