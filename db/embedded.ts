// The embedded default database: PGlite (Postgres compiled to WASM) with pgvector, served on 127.0.0.1 over
// the Postgres wire protocol so that every process talks to it with `pg`, exactly as to a real server.
import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { servePglite } from './pglite-server';

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
  const db = await PGlite.create({ dataDir: opts.dataDir, extensions: { vector } });
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
