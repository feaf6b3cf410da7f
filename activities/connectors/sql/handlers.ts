// The SQL connector's tools (definitions in model/tools.ts): list tables and columns, a parameterised query of one
// statement that reads (read.ts), inserts and updates where the connection allows writes. Every statement runs under
// the connection's statement timeout; a query answering more rows than its row limit fails and says so rather than
// truncating silently, and stops reading there.
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import type { ToolInput } from '../../../model/tools';
import type { ToolContext } from '../../tools/tool-context';
import type { SqlClient } from './client';
import { readStatement, StatementRefused } from './read';
import { readOnlyMessage } from './writes';

/** Database errors that a retry cannot fix (the statement is wrong, or not allowed), by SQLSTATE or MySQL errno. */
const readOnlyCodes = new Set(['25006', 'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION']);
const timeoutCodes = new Set(['57014', 'ER_STATEMENT_TIMEOUT', 'ER_QUERY_TIMEOUT']);
const unreachableCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

function failure(err: unknown, connection: string, client: SqlClient): never {
  if (err instanceof ApplicationFailure) throw err;
  const e = err as { code?: string; message?: string; errno?: number };
  const code = String(e.code ?? '');
  const detail = (e.message ?? String(err)).split('\n')[0].slice(0, 500);
  if (unreachableCodes.has(code) || /Timeout acquiring a connection/.test(detail))
    throw ApplicationFailure.retryable(
      `connection "${connection}" cannot reach its database: ${detail}`,
      'SqlUnreachable',
    );
  if (err instanceof StatementRefused) throw ApplicationFailure.nonRetryable(detail, 'SqlReadOnly');
  // PostgreSQL's extended protocol takes one statement.
  if (/cannot insert multiple commands into a prepared statement/.test(detail))
    throw ApplicationFailure.nonRetryable(`sql.query runs one statement per call (${detail})`, 'SqlReadOnly');
  if (readOnlyCodes.has(code))
    throw ApplicationFailure.nonRetryable(
      `sql.query only reads; to change rows use sql.insert or sql.update on a connection that allows writes (${detail})`,
      'SqlReadOnly',
    );
  if (timeoutCodes.has(code) || /max_statement_time|maximum statement execution time/i.test(detail))
    throw ApplicationFailure.nonRetryable(
      `the statement ran longer than connection "${connection}" allows (${client.config.statement_timeout_ms} ms)`,
      'SqlTimeout',
    );
  throw ApplicationFailure.nonRetryable(`connection "${connection}": ${detail}`, 'SqlError');
}

function clientOf(ctx: ToolContext, connection: string): Promise<SqlClient> {
  if (!ctx.sqlClient) throw ApplicationFailure.nonRetryable('SQL tools run only in an agent run', 'NoRun');
  return ctx.sqlClient(connection);
}

/** Runs `fn` in a transaction bounded by the connection's statement timeout (read-only unless `write`). */
async function inTransaction<T>(client: SqlClient, write: boolean, fn: (trx: Knex.Transaction) => Promise<T>) {
  const ms = client.config.statement_timeout_ms;
  return client.knex.transaction(
    async (trx) => {
      if (client.kind === 'postgres') await trx.raw(`set local statement_timeout = ${ms}`);
      else {
        // MariaDB bounds every statement (seconds); MySQL only SELECTs (milliseconds).
        await trx
          .raw(`set session max_statement_time = ${ms / 1000}`)
          .catch(() => trx.raw(`set session max_execution_time = ${ms}`));
      }
      return fn(trx);
    },
    { readOnly: !write },
  );
}

function writable(client: SqlClient, connection: string) {
  if (!client.config.allow_writes) throw ApplicationFailure.nonRetryable(readOnlyMessage(connection), 'SqlReadOnly');
}

async function listTables(input: ToolInput<'sql.list_tables'>, ctx: ToolContext) {
  const client = await clientOf(ctx, input.connection);
  try {
    const columns: {
      table_schema: string;
      table_name: string;
      column_name: string;
      data_type: string;
      is_nullable: string;
    }[] = await inTransaction(client, false, (trx) => {
      const q = trx('information_schema.columns')
        .select('table_schema', 'table_name', 'column_name', 'data_type', 'is_nullable')
        .orderBy(['table_schema', 'table_name', 'ordinal_position']);
      return client.kind === 'postgres'
        ? q.whereNotIn('table_schema', ['pg_catalog', 'information_schema'])
        : q.whereRaw('table_schema = database()');
    });
    const tables = new Map<string, { table: string; columns: { name: string; type: string; nullable: boolean }[] }>();
    for (const c of columns.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k.toLowerCase(), v])))) {
      const name =
        client.kind === 'postgres' && c.table_schema !== 'public' ? `${c.table_schema}.${c.table_name}` : c.table_name;
      const table = tables.get(name) ?? { table: name, columns: [] };
      table.columns.push({ name: c.column_name, type: c.data_type, nullable: c.is_nullable === 'YES' });
      tables.set(name, table);
    }
    return { tables: [...tables.values()] };
  } catch (err) {
    failure(err, input.connection, client);
  }
}

async function query(input: ToolInput<'sql.query'>, ctx: ToolContext) {
  const client = await clientOf(ctx, input.connection);
  const limit = client.config.row_limit;
  try {
    const { rows, more } = await readStatement(client, input.sql, input.params, limit);
    if (more)
      throw ApplicationFailure.nonRetryable(
        `the query answers more than ${limit} rows, more than connection "${input.connection}" allows: narrow it with WHERE or LIMIT`,
        'SqlRowLimit',
      );
    return { rows, row_count: rows.length };
  } catch (err) {
    failure(err, input.connection, client);
  }
}

async function insert(input: ToolInput<'sql.insert'>, ctx: ToolContext) {
  const client = await clientOf(ctx, input.connection);
  writable(client, input.connection);
  try {
    await inTransaction(client, true, (trx) => trx(input.table).insert(input.rows));
    return { inserted: input.rows.length };
  } catch (err) {
    failure(err, input.connection, client);
  }
}

async function update(input: ToolInput<'sql.update'>, ctx: ToolContext) {
  const client = await clientOf(ctx, input.connection);
  writable(client, input.connection);
  try {
    const updated = await inTransaction(client, true, (trx) => trx(input.table).where(input.where).update(input.set));
    return { updated: Number(updated) };
  } catch (err) {
    failure(err, input.connection, client);
  }
}

export const sqlToolHandlers = {
  'sql.list_tables': listTables,
  'sql.query': query,
  'sql.insert': insert,
  'sql.update': update,
};
