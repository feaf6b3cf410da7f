// db/ (DESIGN.md "Top-level layout"): knex migrations, seeds, one query module per aggregate (agents, runs,
// sources, run files, ...) and the embedded Postgres launcher. It imports model/ only: never services/, api/,
// workflows/ or activities/, and the console never imports it (roles reach the console through GET /v1/me).
import knexFactory, { Knex } from 'knex';
import pg from 'pg';

// bigint counts (count(*), bigserial) come back as JS numbers: they never approach 2^53 here.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export function createKnex(connectionString: string, pool: { min?: number; max?: number } = {}): Knex {
  return knexFactory({
    client: 'pg',
    connection: { connectionString },
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
    log: {
      // knex prints every failed pool acquire with a stack; the caller reports the failure in one line instead.
      warn: (message: string) => {
        if (!String(message).startsWith('Acquire connection error')) console.warn(message);
      },
    },
  });
}
