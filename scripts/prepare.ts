// The start-time work of `npm start` that needs the database and Temporal client libraries (knex, pg, the Temporal
// SDK), in a short-lived process of its own: the supervisor (scripts/start.ts) runs for as long as Cadre does and
// would hold them all that time (about 50 MB). It prints one JSON line on stdout, the last one, and exits:
// `{"done": …}`, or `{"error": "<the one line that says what to fix>"}` with exit code 1.
//
//   prepare.js check  before anything starts: an external DATABASE_URL is reachable, has pgvector and is migrated,
//                     and an external TEMPORAL_ADDRESS answers, so a wrong one fails in one line
//   prepare.js seed   once the database runs: migrations, the demo workspace on a first start, the owner's claim
//                     link, and the examples' schedules in Temporal
import { loadConfig } from '../cadre.config';
import { ownerClaimLink, seedDemoWorkspace, type DemoSeed } from '../db/seeds';
import { reconcileSchedules } from '../schedules/sync';
import { loadTemporalConfig } from '../temporal.config';
import { connectDatabase, connectTemporal } from './connections';
import { oneLine } from './fail-fast';

/** What the banner shows: the demo workspace when this start created it, the owner's claim link while unclaimed. */
export interface Prepared {
  seed?: DemoSeed;
  claim?: string;
}

export type PrepareStep = 'check' | 'seed';

async function check(): Promise<void> {
  const config = loadConfig();
  const tc = loadTemporalConfig();
  if (!config.db.embedded) await (await connectDatabase(config, { migrate: true })).knex.destroy();
  if (!tc.embedded) await (await connectTemporal(tc)).connection.close();
}

async function seed(): Promise<Prepared> {
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

const steps: Record<PrepareStep, () => Promise<unknown>> = { check, seed };

function answer(line: object, code: number): void {
  // Exits once the line is written: a client library may leave a timer or socket that would keep the process up.
  process.stdout.write(`${JSON.stringify(line)}\n`, () => process.exit(code));
}

const step = steps[process.argv[2] as PrepareStep];
if (!step) {
  answer({ error: `scripts/prepare: unknown step ${JSON.stringify(process.argv[2])}` }, 2);
} else {
  step().then(
    (done) => answer({ done: done ?? null }, 0),
    (err: unknown) => {
      if (process.env.CADRE_DEBUG) console.error(err);
      answer({ error: oneLine(err) }, 1);
    },
  );
}
