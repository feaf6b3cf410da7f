// The start-time work of `npm start` that needs more than supervising does (zod, knex, pg, the Temporal SDK, jszip),
// in a short-lived process of its own: the supervisor (scripts/start.ts) runs for as long as Cadre does and would
// hold all of it that time, and what glibc's allocator took for a one-time job stays with the process. It prints one
// JSON line on stdout, the last one, and exits: `{"done": …}`, or `{"error": "<the one line that says what to fix>"}`
// with exit code 1. Progress a person should see at once goes to stderr.
//
//   prepare.js config  first: reads and checks the whole configuration, and answers what the supervisor needs of it
//   prepare.js check   before anything starts: an external DATABASE_URL is reachable, has pgvector and is migrated,
//                      and an external TEMPORAL_ADDRESS answers, so a wrong one fails in one line
//   prepare.js model   installs the local embedding model into .models/ when it is missing (scripts/embedding-model.ts)
//   prepare.js seed    once the database runs: migrations, the demo workspace on a first start, the owner's claim
//                      link, and the examples' schedules in Temporal
//
// Each step loads only its own libraries (require() inside it: a dynamic import() of a .ts module is not compiled
// by tsx's CommonJS hook), so the steps that run at every start stay quick.
import { loadConfig } from '../cadre.config';
import type { DemoSeed } from '../db/seeds';
import { loadTemporalConfig } from '../temporal.config';
import { oneLine } from './fail-fast';

/** What the banner shows: the demo workspace when this start created it, the owner's claim link while unclaimed. */
export interface Prepared {
  seed?: DemoSeed;
  claim?: string;
}

/** What the supervisor needs of the configuration: plain values, so that it never loads zod. */
export interface StartConfig {
  dataDir: string;
  logFormat: 'readable' | 'json';
  web: { port: number; publicUrl: string };
  db: { embedded: boolean; embeddedPort: number; embeddedDir: string };
  temporal: {
    embedded: boolean;
    address: string;
    namespace: string;
    uiUrl: string;
    embeddedPort: number;
    embeddedUiPort: number;
    searchAttributes: Record<string, string>;
  };
}

/** Each step's answer (`done`). */
export interface PrepareAnswers {
  config: StartConfig;
  check: null;
  model: null;
  seed: Prepared;
}
export type PrepareStep = keyof PrepareAnswers;

function config(): StartConfig {
  const c = loadConfig();
  const tc = loadTemporalConfig();
  return {
    dataDir: c.dataDir,
    logFormat: c.logFormat,
    web: { port: c.web.port, publicUrl: c.web.publicUrl },
    db: { embedded: c.db.embedded, embeddedPort: c.db.embeddedPort, embeddedDir: c.db.embeddedDir },
    temporal: {
      embedded: tc.embedded,
      address: tc.address,
      namespace: tc.namespace,
      uiUrl: tc.uiUrl,
      embeddedPort: tc.embeddedPort,
      embeddedUiPort: tc.embeddedUiPort,
      searchAttributes: tc.searchAttributes,
    },
  };
}

async function check(): Promise<null> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { connectDatabase, connectTemporal }: typeof import('./connections') = require('./connections');
  const config = loadConfig();
  const tc = loadTemporalConfig();
  if (!config.db.embedded) await (await connectDatabase(config, { migrate: true })).knex.destroy();
  if (!tc.embedded) await (await connectTemporal(tc)).connection.close();
  return null;
}

async function model(): Promise<null> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { ensureEmbeddingModel }: typeof import('./embedding-model') = require('./embedding-model');
  try {
    await ensureEmbeddingModel((line) => console.error(line));
  } catch (err) {
    // pip's own words went to stderr above; the answer is the supervisor's one warning line.
    throw new Error(oneLine(err).split('\n')[0]);
  }
  return null;
}

async function seed(): Promise<Prepared> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { ownerClaimLink, seedDemoWorkspace }: typeof import('../db/seeds') = require('../db/seeds');
  const { reconcileSchedules }: typeof import('../schedules/sync') = require('../schedules/sync');
  const { connectDatabase, connectTemporal }: typeof import('./connections') = require('./connections');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const config = loadConfig();
  const tc = loadTemporalConfig();
  const { knex } = await connectDatabase(config, { migrate: true });
  try {
    const seeded = await seedDemoWorkspace(knex);
    const claim = await ownerClaimLink(knex, config.web.publicUrl);
    // The web made Temporal's schedules match the database as it started, possibly before the examples' schedules
    // were seeded: once more now that they are there.
    if (seeded) {
      const temporal = await connectTemporal(tc);
      await reconcileSchedules({ knex, temporal: temporal.client, temporalConfig: tc });
      await temporal.connection.close();
    }
    return { seed: seeded, claim };
  } finally {
    await knex.destroy();
  }
}

const steps: { [S in PrepareStep]: () => PrepareAnswers[S] | Promise<PrepareAnswers[S]> } = {
  config,
  check,
  model,
  seed,
};

function answer(line: object, code: number): void {
  // Exits once the line is written: a client library may leave a timer or socket that would keep the process up.
  process.stdout.write(`${JSON.stringify(line)}\n`, () => process.exit(code));
}

const named = process.argv[2] as PrepareStep;
const step: (() => unknown) | undefined = Object.hasOwn(steps, named) ? steps[named] : undefined;
if (!step) {
  answer({ error: `scripts/prepare: unknown step ${JSON.stringify(process.argv[2])}` }, 2);
} else {
  // A step that throws at once (a wrong configuration) answers as one that rejects.
  Promise.resolve()
    .then(step)
    .then(
      (done) => answer({ done: done ?? null }, 0),
      (err: unknown) => {
        if (process.env.CADRE_DEBUG) console.error(err);
        answer({ error: oneLine(err) }, 1);
      },
    );
}
