// `npm start`'s one Node process for Cadre itself: the embedded Postgres (when DATABASE_URL is unset), the worker
// and the web, which were three processes. Each Node process holds its own runtime, copies of the modules the three
// share (knex, pg, the Temporal client, the config) and its own heap headroom; one process instead of three idled
// about 220 MB lower (npm run bench:footprint; README, under Development).
// The database runs in a thread of its own: PGlite runs each query synchronously in WebAssembly, which on the main
// thread would hold up the API and the activities, and in a thread it keeps a core of its own as before.
// Whatever of the three fails ends the process (exit code 1), and the supervisor restarts it whole, with its backoff:
// Postgres replays its write-ahead log and the runs resume from Temporal, every item done once. SIGTERM or SIGINT
// stops the web, then the worker (its tasks in flight finish or are handed back), then the database (its WAL is
// flushed). Production keeps the web and the worker apart, each scalable on its own (scripts/web.ts,
// scripts/worker.ts, docker/).
import { Worker as Thread, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { embeddedDbPassword, loadConfig, type CadreConfig } from '../cadre.config';
import type { startEmbeddedPostgres } from '../db/embedded';
import { main } from './fail-fast';

type DbSettings = Parameters<typeof startEmbeddedPostgres>[0];

/** Starts the database thread; resolves with its stop once it accepts connections. */
function startDbThread(config: CadreConfig, onCrash: (why: string) => void): Promise<() => Promise<void>> {
  // Its settings come from here: the configuration module would load zod in the thread too (3.4 MB of its heap).
  const settings: DbSettings = {
    dataDir: config.db.embeddedDir,
    port: config.db.embeddedPort,
    password: embeddedDbPassword(config),
  };
  const thread = new Thread(__filename, { workerData: settings });
  let stopping = false;
  const exited = new Promise<void>((resolve) =>
    thread.once('exit', (code) => {
      resolve();
      if (!stopping) onCrash(`the embedded database stopped (exit code ${code})`);
    }),
  );
  thread.on('error', (err) => onCrash(`the embedded database failed: ${err.message}`));
  return new Promise((resolve, reject) => {
    thread.once('error', reject);
    thread.once('message', () =>
      resolve(async () => {
        stopping = true;
        thread.postMessage('stop');
        await exited;
      }),
    );
  });
}

/** In the database thread: serves PGlite until the main thread says stop. */
async function runDbThread(): Promise<void> {
  // Loaded in the thread only (a dynamic import() of a .ts module is not compiled by tsx's CommonJS hook).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startEmbeddedPostgres: start }: typeof import('../db/embedded') = require('../db/embedded');
  const settings = workerData as DbSettings;
  const pg = await start(settings);
  console.log(`embedded Postgres (PGlite + pgvector) on 127.0.0.1:${pg.port}, data in ${settings.dataDir}`);
  parentPort!.once('message', () => void pg.stop().then(() => process.exit(0)));
  parentPort!.postMessage('ready');
}

async function run(): Promise<void> {
  const crash = (why: string) => {
    console.error(`cadre: ${why}`);
    process.exit(1);
  };
  /** Each part's stop, in order of start: they are stopped in reverse. */
  const stops: (() => Promise<void>)[] = [];
  let stopping = false;
  const stopAll = async () => {
    if (stopping) return;
    stopping = true;
    for (const stop of [...stops].reverse()) await stop().catch((err: Error) => console.error(err.message));
    process.exit(0);
  };
  process.once('SIGTERM', () => void stopAll());
  process.once('SIGINT', () => void stopAll());

  const config = loadConfig();
  if (config.db.embedded) stops.push(await startDbThread(config, crash));
  // Loaded here, not in the database thread. web.ts first: its first import sets up tracing, which must come before
  // http, express and pg load.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { startWeb }: typeof import('./web') = require('./web');
  const { startWorker }: typeof import('./worker') = require('./worker');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const [web, worker] = await Promise.all([startWeb(), startWorker()]);
  stops.push(worker.stop, web.stop);
  worker.done.then(
    () => stopping || crash('the worker stopped'),
    (err: Error) => stopping || crash(`the worker failed: ${err.message}`),
  );
}

if (isMainThread) main('cadre', run);
else main('db', runDbThread);
