// A knex client for a SQL connection (PostgreSQL, or MySQL and MariaDB through mysql2), built from the connection row
// and its opened credentials, and kept per connection version: a changed connection gets a new pool, and an idle
// one is closed. Handlers receive the client, never the password.
import knexFactory, { type Knex } from 'knex';
import { defaultPorts, type SqlConfig, type SqlKind } from '../../../model/connection';

export interface SqlClient {
  knex: Knex;
  kind: SqlKind;
  config: SqlConfig;
}

const idleCloseMs = 5 * 60_000;
const clients = new Map<string, { client: SqlClient; timer: NodeJS.Timeout }>();

export function buildSqlClient(kind: SqlKind, config: SqlConfig, password: string): SqlClient {
  const connection = {
    host: config.host,
    port: config.port ?? defaultPorts[kind],
    database: config.database,
    user: config.user,
    password,
    ssl: config.ssl ? { rejectUnauthorized: true } : undefined,
    connectTimeout: 10_000,
  };
  const knex = knexFactory({
    client: kind === 'postgres' ? 'pg' : 'mysql2',
    connection:
      kind === 'postgres'
        ? { ...connection, connectionTimeoutMillis: connection.connectTimeout, connectTimeout: undefined }
        : connection,
    pool: { min: 0, max: 4 },
    acquireConnectionTimeout: 15_000,
    // knex prints failed connection attempts itself; the failure reaches the step (or the API answer) as an error.
    log: { warn: () => {}, error: () => {}, deprecate: () => {}, debug: () => {} },
  });
  return { knex, kind, config };
}

/** The client of this version of the connection (`key` changes when the connection does). */
export function sqlClientFor(key: string, build: () => SqlClient): SqlClient {
  const cached = clients.get(key);
  const client = cached?.client ?? build();
  if (cached) clearTimeout(cached.timer);
  const timer = setTimeout(() => {
    clients.delete(key);
    void client.knex.destroy();
  }, idleCloseMs);
  timer.unref();
  clients.set(key, { client, timer });
  return client;
}

/** Connects and asks the server's version: what "test the connection" shows, or the reason it fails. */
export async function testSqlClient(client: SqlClient): Promise<{ server_version: string }> {
  const version =
    client.kind === 'postgres'
      ? (await client.knex.raw('select version() as v')).rows[0].v
      : ((await client.knex.raw('select version() as v'))[0] as { v: string }[])[0].v;
  return { server_version: String(version) };
}
