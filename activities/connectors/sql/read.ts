// sql.query's statement, on a session of the connection's pool: one statement that reads, in a read-only transaction
// that is rolled back afterwards (on PostgreSQL a setting it changed goes with it), reading at most one row more
// than the row limit. PostgreSQL gets it through the extended protocol, which refuses a second statement ("cannot
// insert multiple commands into a prepared statement"), and sends rows through a portal that stops after limit + 1;
// MySQL and MariaDB get it on a connection without multipleStatements, row by row, and a query still answering past
// limit + 1 is killed (KILL QUERY) rather than read to its end.
import pg from 'pg';
import type { Connection as MysqlConnection } from 'mysql2';
import type { SqlKind } from '../../../model/connection';
import type { SqlClient } from './client';

export type SqlValue = string | number | boolean | null;
export interface ReadAnswer {
  /** At most limit + 1 rows. */
  rows: Record<string, unknown>[];
  /** The statement answers more rows than `rows` holds: it was stopped. */
  more: boolean;
}

/** A statement sql.query does not run, said before anything reaches the server. */
export class StatementRefused extends Error {}

const readingKeywords: Record<SqlKind, string[]> = {
  postgres: ['select', 'with', 'values', 'table', 'show', 'explain'],
  mysql: ['select', 'with', 'values', 'table', 'show', 'explain', 'describe', 'desc'],
};

/**
 * Why sql.query will not run `sql`, if it will not: its first word (after comments and opening parentheses) must be
 * one that starts a reading statement; everything else (COMMIT, SET, DO, CALL, COPY, MariaDB's `BEGIN NOT ATOMIC`
 * blocks, `EXECUTE IMMEDIATE`, `SET STATEMENT … FOR`) is refused. On MySQL and MariaDB an executable comment
 * (`/*!…*\/`, `/*M!…*\/`) or an optimizer hint (`/*+…*\/`) is refused anywhere in the text: the server runs what they
 * hold. The server still decides what a statement may do: the session is read-only and one statement per call.
 */
export function statementRefusal(kind: SqlKind, sql: string): string | undefined {
  const allowed = readingKeywords[kind];
  const listed = `${allowed
    .slice(0, -1)
    .map((k) => k.toUpperCase())
    .join(', ')} or ${allowed[allowed.length - 1].toUpperCase()}`;
  if (kind === 'mysql' && /\/\*\s*(!|m!|\+)/i.test(sql))
    return 'sql.query only reads: it runs no executable comments (/*! … */) or optimizer hints (/*+ … */)';
  let i = 0;
  for (;;) {
    const rest = sql.slice(i);
    const space = /^[\s(]+/.exec(rest);
    if (space) i += space[0].length;
    // MySQL's `--` starts a comment only before a space (`--1` is minus minus one).
    else if (kind === 'postgres' ? rest.startsWith('--') : /^(--(\s|$)|#)/.test(rest)) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end + 1;
    } else if (rest.startsWith('/*')) {
      // PostgreSQL's block comments nest; MySQL's do not.
      let depth = 0;
      let j = i;
      do {
        if (sql.startsWith('/*', j)) {
          depth += kind === 'postgres' || depth === 0 ? 1 : 0;
          j += 2;
        } else if (sql.startsWith('*/', j)) {
          depth--;
          j += 2;
        } else j++;
      } while (depth > 0 && j < sql.length);
      i = j;
    } else break;
  }
  const word = /^[A-Za-z_]+/.exec(sql.slice(i))?.[0].toLowerCase();
  if (word && allowed.includes(word)) return undefined;
  const shown = word ? word.toUpperCase() : JSON.stringify(sql.slice(i, i + 20));
  return `sql.query only reads: it runs one ${listed} statement, not ${shown}; to change rows use sql.insert or sql.update on a connection that allows writes`;
}

interface KnexInternals {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
  cancelQuery(connection: unknown): Promise<unknown>;
}

/** pg's Query, with the parts of the extended protocol this file drives. */
interface PgQueryInternals extends pg.Query {
  handlePortalSuspended(wire: { sync(): void }): void;
  handleError(err: Error, wire: { sync(): void }): void;
}

/** A portal read to limit + 1 rows; suspended there, it is closed (Sync) instead of asked for more. */
function pgRead(conn: pg.Client, text: string, values: unknown[], limit: number): Promise<ReadAnswer> {
  return new Promise((resolve, reject) => {
    let more = false;
    const config = { text, values, rows: limit + 1, queryMode: 'extended' };
    const query = new pg.Query(config as pg.QueryConfig) as unknown as PgQueryInternals;
    query.handlePortalSuspended = (wire) => {
      more = true;
      wire.sync();
    };
    // With a row count pg sends no Sync of its own, and the server skips everything until one after an error.
    const handleError = query.handleError.bind(query);
    query.handleError = (err, wire) => {
      if ('severity' in err) wire.sync();
      handleError(err, wire);
    };
    query.on('error', reject);
    query.on('end', (result: pg.QueryResult) => resolve({ rows: result.rows ?? [], more }));
    conn.query(query);
  });
}

/** Rows as they arrive; at limit + 1 the statement is killed and the rest, until it stops, is not kept. */
function mysqlRead(
  client: SqlClient,
  conn: MysqlConnection,
  sql: string,
  values: unknown[],
  limit: number,
): Promise<ReadAnswer> {
  return new Promise((resolve, reject) => {
    const rows: Record<string, unknown>[] = [];
    let more = false;
    let failed: Error | undefined;
    let killed: Promise<unknown> = Promise.resolve();
    let rowsFollow = false; // the result under way is a result set (an OK packet also comes as a 'result')
    const settle = () => {
      conn.off('error', lost);
      void killed.then(() => (failed && !more ? reject(failed) : resolve({ rows, more })));
    };
    // A lost connection fails the query without ending it.
    const lost = (err: Error) => {
      failed = err;
      settle();
    };
    conn.once('error', lost);
    const query = conn.query({ sql, values });
    query.on('fields', (fields: unknown) => (rowsFollow = fields !== undefined));
    query.on('result', (row: unknown) => {
      if (!rowsFollow || more) return;
      rows.push(row as Record<string, unknown>);
      if (rows.length > limit) {
        more = true;
        killed = (client.knex.client as KnexInternals).cancelQuery(conn).catch(() => {});
      }
    });
    query.on('error', (err: Error) => (failed = err));
    query.on('end', settle);
  });
}

function run(conn: unknown, kind: SqlKind, sql: string): Promise<unknown> {
  if (kind === 'postgres') return (conn as pg.Client).query(sql);
  return new Promise((resolve, reject) =>
    (conn as MysqlConnection).query(sql, (err, rows) => (err ? reject(err) : resolve(rows))),
  );
}

/**
 * Runs one reading statement with `?` placeholders bound to `params` (knex's binding rules, as `knex.raw`), on a
 * session of the pool, in a read-only transaction that is rolled back; answers at most limit + 1 rows.
 */
export async function readStatement(
  client: SqlClient,
  sql: string,
  params: readonly SqlValue[],
  limit: number,
): Promise<ReadAnswer> {
  const refusal = statementRefusal(client.kind, sql);
  if (refusal) throw new StatementRefused(refusal);
  const native = client.knex
    .raw(sql, [...params])
    .toSQL()
    .toNative();
  const knexClient = client.knex.client as KnexInternals;
  const conn = await knexClient.acquireConnection();
  let answer: ReadAnswer | undefined;
  let error: unknown;
  try {
    await run(conn, client.kind, 'start transaction read only');
    if (client.kind === 'postgres') {
      await run(conn, client.kind, `set local statement_timeout = ${client.config.statement_timeout_ms}`);
      answer = await pgRead(conn as pg.Client, native.sql, [...native.bindings], limit);
    } else answer = await mysqlRead(client, conn as MysqlConnection, native.sql, [...native.bindings], limit);
  } catch (err) {
    error = err;
  }
  try {
    await run(conn, client.kind, 'rollback');
  } catch (err) {
    // A session that cannot roll back is not given to anyone else.
    (conn as { __knex__disposed?: unknown }).__knex__disposed = err;
  }
  await knexClient.releaseConnection(conn);
  if (error !== undefined) throw error;
  return answer!;
}
