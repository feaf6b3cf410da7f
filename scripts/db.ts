// The embedded database process: PGlite with pgvector on 127.0.0.1, data under CADRE_DATA_DIR. `npm start` runs it
// in a thread of the process of the web and the worker instead (scripts/embedded-node.ts), with the same
// startEmbeddedPostgres.
import { embeddedDbPassword, loadConfig } from '../cadre.config';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../db/embedded';
import { main } from './fail-fast';

async function startDb(): Promise<EmbeddedPostgres> {
  const config = loadConfig();
  const pg = await startEmbeddedPostgres({
    dataDir: config.db.embeddedDir,
    port: config.db.embeddedPort,
    password: embeddedDbPassword(config),
  });
  console.log(`embedded Postgres (PGlite + pgvector) on 127.0.0.1:${pg.port}, data in ${config.db.embeddedDir}`);
  return pg;
}

if (require.main === module) {
  main('db', async () => {
    const pg = await startDb();
    let stopping = false;
    const stop = async () => {
      if (stopping) return;
      stopping = true;
      await pg.stop();
      process.exit(0);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
