// The embedded default database: PGlite (Postgres compiled to WASM) with pgvector, served on 127.0.0.1 over
// the Postgres wire protocol so that every process talks to it with `pg`, exactly as to a real server.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { nodeScript } from '../node-script';
import { servePglite } from './pglite-server';

/**
 * Postgres's shared buffers live in PGlite's WASM memory, and all of it is resident from the start: 128 MB by default.
 * 32 MB cost about 100 MB less (npm run bench:footprint), and 16 MB another 18 MB of the database thread (47 → 29 MB
 * of WASM memory resident); its 10,000-row run took 8.9-14.6 s on a busy machine, and the stack
 * test's 20,000-item run completes as before. The operating system's page cache holds the rest of the files.
 */
const startParams = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'];

/**
 * A new cluster is made in a process of its own: PGlite runs initdb in a second Postgres instance in memory and
 * copies its files over, and the memory of that instance stayed resident in the database process afterwards (about
 * 200 MB of its 560 MB on a first start).
 */
function initCluster(dataDir: string): void {
  if (fs.existsSync(path.join(dataDir, 'PG_VERSION'))) return;
  try {
    execFileSync(...nodeScript(__filename, '--init', dataDir), {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 300_000,
    });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
    throw new Error(`creating the embedded database in ${dataDir} failed${stderr ? `: ${stderr}` : ''}`);
  }
}

export interface EmbeddedPostgres {
  port: number;
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  password: string;
}): Promise<EmbeddedPostgres> {
  fs.mkdirSync(opts.dataDir, { recursive: true });
  initCluster(opts.dataDir);
  const db = await PGlite.create({ dataDir: opts.dataDir, extensions: { vector }, startParams });
  // Several clients (web pool, worker pool, CLI) share the one single-threaded PGlite instance.
  const server = await servePglite(db, {
    host: '127.0.0.1',
    port: opts.port,
    maxConnections: 100,
    password: opts.password,
  });
  let stopped = false;
  return {
    port: opts.port,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      await db.close(); // flushes the WAL so the next start finds a clean database
    },
  };
}

// `node dist/db/embedded.js --init <dir>` (or the source through tsx): initCluster's child process.
if (require.main === module && process.argv[2] === '--init') {
  void PGlite.create({ dataDir: process.argv[3], extensions: { vector } }).then((db) => db.close());
}
