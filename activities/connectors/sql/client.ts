// A knex client for a SQL connection (PostgreSQL, or MySQL and MariaDB through mysql2), built from the connection row
// and its opened credentials, and kept per connection version: a changed connection gets a new pool, and an idle
// one is closed. Handlers receive the client, never the password.
import net from 'node:net';
import knexFactory, { type Knex } from 'knex';
import { defaultPorts, type SqlConfig, type SqlKind } from '../../../model/connection';
import { postgresSessionOptions, sessionSetup } from './session';

export interface SqlClient {
  knex: Knex;
  kind: SqlKind;
  config: SqlConfig;
}

const idleCloseMs = 5 * 60_000;
const clients = new Map<string, { client: SqlClient; timer: NodeJS.Timeout }>();

/**
 * A client that connects to `address` (the checked address of the connection's host, see ssrf-guard.ts) and never
 * resolves the host again; TLS still checks the certificate against the host's name.
 */
export function buildSqlClient(kind: SqlKind, config: SqlConfig, password: string, address = config.host): SqlClient {
  const port = config.port ?? defaultPorts[kind];
  const connection = {
    host: config.host,
    port,
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
        ? {
            ...connection,
            host: address,
            ssl: config.ssl
              ? { rejectUnauthorized: true, servername: net.isIP(config.host) ? undefined : config.host }
              : undefined,
            connectionTimeoutMillis: connection.connectTimeout,
            connectTimeout: undefined,
            // The session's defaults, set by the server at startup: read-only unless writes are allowed, and the
            // statement timeout (session.ts).
            options: postgresSessionOptions(config),
          }
        : // mysql2 takes the TLS server name from `host`, and the socket from `stream` when given one.
          { ...connection, stream: () => net.connect(port, address), multipleStatements: false },
    // Each new session is checked and given its limits before it joins the pool (session.ts).
    pool: { min: 0, max: 4, afterCreate: sessionSetup(kind, config) },
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
