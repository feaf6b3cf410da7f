// The DuckDB warehouse connector (model/connectors/duckdb.ts) with @duckdb/node-api. Each connection gets an
// in-memory database whose views are its directory's files (or its .duckdb file, opened read-only); file access is
// then limited to that directory and the configuration locked, so SQL cannot read elsewhere or lift the limit.
// A workspace's connections read only its own directory under each root the operator allows
// (`<CADRE_WAREHOUSE_DIRS root>/<workspace id>/`, made on first use), and DuckDB's temporary directory (which it
// would otherwise let any query read, the worker's `.tmp/`) is turned off.
// Only a single SELECT runs (COPY could write into the directory), under the statement timeout and the row limit.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { duckdbConnector, type DuckdbConfig } from '../../../model/connectors/duckdb';
import { clientCache, type OpenedConnection } from '../connector';
import type { ConnectorLimits } from '../../../model/connection';
import { implement } from '../implementation';

const readers: Record<string, string> = {
  '.parquet': 'read_parquet',
  '.csv': 'read_csv',
  '.tsv': 'read_csv',
  '.json': 'read_json',
  '.ndjson': 'read_json',
  '.jsonl': 'read_json',
};

/** A failure a retry cannot fix: the settings or the statement. */
const refused = (message: string, type = 'WarehouseError') => ApplicationFailure.nonRetryable(message, type);

/** A workspace id as a directory name: nothing that could climb out of the root. */
const workspaceDirName = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * The workspace's own directory under each root the operator allows, made on first use (a root that cannot be
 * written to keeps only what the operator made there). Never a root itself: that is every workspace's.
 */
async function workspaceDirs(limits: ConnectorLimits): Promise<string[]> {
  const roots = limits.warehouseDirs ?? [];
  if (roots.length === 0)
    throw refused(
      'this deployment connects no warehouse files: the operator allows directories in CADRE_WAREHOUSE_DIRS',
    );
  const workspace = limits.workspaceId;
  if (workspace === undefined || !workspaceDirName.test(workspace))
    throw refused('a warehouse connection reads the files of its workspace, and this one names none');
  return Promise.all(
    roots.map(async (root) => {
      const dir = path.join(path.resolve(root), workspace);
      await fs.mkdir(dir, { recursive: true, mode: 0o750 }).catch(() => undefined);
      return dir;
    }),
  );
}

/** The real path of `given` if it lies in one of the workspace's directories; otherwise why not. */
async function allowedPath(given: string, limits: ConnectorLimits): Promise<string> {
  const dirs = await workspaceDirs(limits);
  const real = await fs.realpath(path.resolve(dirs[0], given)).catch(() => {
    throw refused(`"${given}" does not exist on the workers`);
  });
  for (const dir of dirs) {
    const base = await fs.realpath(dir).catch(() => undefined);
    if (base && (real === base || real.startsWith(base + path.sep))) return real;
  }
  throw refused(
    `"${given}" is outside the directories this deployment allows (CADRE_WAREHOUSE_DIRS: this workspace's are ${dirs.join(', ')})`,
  );
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteText = (text: string) => `'${text.replaceAll("'", "''")}'`;

async function openWarehouse(config: DuckdbConfig, limits: ConnectorLimits): Promise<DuckDBInstance> {
  const real = await allowedPath(config.path, limits);
  const stat = await fs.stat(real);
  if (stat.isFile() && !/\.(duckdb|db)$/i.test(real))
    throw refused(`"${config.path}" is a file but not a DuckDB database: give a directory of files or a .duckdb file`);
  const { DuckDBInstance } = await import('@duckdb/node-api'); // loaded on first use
  const instance = stat.isDirectory()
    ? await DuckDBInstance.create(':memory:')
    : await DuckDBInstance.create(real, { access_mode: 'READ_ONLY' });
  const setup = await instance.connect();
  try {
    const dir = stat.isDirectory() ? real : path.dirname(real);
    if (stat.isDirectory())
      for (const file of (await fs.readdir(real)).sort()) {
        const reader = readers[path.extname(file).toLowerCase()];
        if (!reader) continue;
        const table = path.basename(file, path.extname(file));
        await setup.run(
          `create view ${quoteIdent(table)} as select * from ${reader}(${quoteText(path.join(real, file))})`,
        );
      }
    // DuckDB lets every query read its temporary directory (the worker's `.tmp/` for an in-memory database, shared
    // by all connections): none, so nothing spills to disk (a query larger than memory fails instead).
    await setup.run("set temp_directory = ''");
    await setup.run(`set allowed_directories = [${quoteText(dir + path.sep)}]`);
    await setup.run('set enable_external_access = false');
    await setup.run('set autoinstall_known_extensions = false');
    await setup.run('set lock_configuration = true');
  } catch (err) {
    instance.closeSync();
    throw refused(`the warehouse files could not be read: ${(err as Error).message.split('\n')[0]}`);
  } finally {
    setup.closeSync();
  }
  return instance;
}

const warehouses = clientCache<DuckDBInstance>((instance) => instance.closeSync());
const warehouseOf = (c: OpenedConnection<typeof duckdbConnector>) =>
  warehouses(c.version, () => openWarehouse(c.config, c.limits));

/** Runs `fn` on a connection of its own, interrupted after the statement timeout. */
async function withTimeout<T>(
  c: OpenedConnection<typeof duckdbConnector>,
  fn: (conn: DuckDBConnection) => Promise<T>,
): Promise<T> {
  const conn = await (await warehouseOf(c)).connect();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    conn.interrupt();
  }, c.config.statement_timeout_ms);
  try {
    return await fn(conn);
  } catch (err) {
    if (err instanceof ApplicationFailure) throw err;
    if (timedOut)
      throw refused(
        `the statement ran longer than connection "${c.name}" allows (${c.config.statement_timeout_ms} ms)`,
        'WarehouseTimeout',
      );
    throw refused(`connection "${c.name}": ${(err as Error).message.split('\n')[0].slice(0, 500)}`);
  } finally {
    clearTimeout(timer);
    conn.closeSync();
  }
}

async function query(
  c: OpenedConnection<typeof duckdbConnector>,
  sql: string,
  params: readonly (string | number | boolean | null)[],
  limit = c.config.row_limit,
) {
  const { DuckDBTypeId, StatementType } = await import('@duckdb/node-api');
  // DuckDB's 64-bit and wider integers come back as text; those that fit a JSON number become one.
  const wideIntegers = new Set([
    DuckDBTypeId.BIGINT,
    DuckDBTypeId.UBIGINT,
    DuckDBTypeId.HUGEINT,
    DuckDBTypeId.UHUGEINT,
  ]);
  return withTimeout(c, async (conn) => {
    const statements = await conn.extractStatements(sql);
    if (statements.count !== 1) throw refused(`give one statement, not ${statements.count}`);
    const prepared = await statements.prepare(0);
    if (prepared.statementType !== StatementType.SELECT)
      throw refused('a warehouse connection only reads: give one SELECT statement', 'WarehouseReadOnly');
    if (prepared.parameterCount !== params.length)
      throw refused(`the statement has ${prepared.parameterCount} ? placeholders but ${params.length} params`);
    if (params.length > 0) prepared.bind([...params]);
    const reader = await prepared.runAndReadUntil(limit + 1);
    if (reader.currentRowCount > limit)
      throw refused(
        `the query answers more than ${limit} rows (connection "${c.name}"'s row limit): narrow it with WHERE or LIMIT, or aggregate`,
        'WarehouseRowLimit',
      );
    const wide = reader.columnNames().filter((_, i) => wideIntegers.has(reader.columnTypes()[i].typeId));
    const rows = reader.getRowObjectsJson() as Record<string, unknown>[];
    for (const row of rows)
      for (const column of wide) {
        const n = Number(row[column]);
        if (typeof row[column] === 'string' && Number.isSafeInteger(n)) row[column] = n;
      }
    return { columns: reader.columnNames(), rows, row_count: rows.length };
  });
}

async function listTables(c: OpenedConnection<typeof duckdbConnector>) {
  const { rows } = await query(
    c,
    `select table_name, column_name, data_type from information_schema.columns
     where table_schema = 'main' order by table_name, ordinal_position`,
    [],
    100_000, // the catalogue, not an answer the row limit is for
  );
  const tables = new Map<string, { name: string; type: string }[]>();
  for (const r of rows as { table_name: string; column_name: string; data_type: string }[]) {
    if (!tables.has(r.table_name)) tables.set(r.table_name, []);
    tables.get(r.table_name)!.push({ name: r.column_name, type: r.data_type });
  }
  return { tables: [...tables].map(([table, columns]) => ({ table, columns })) };
}

export const duckdbImplementation = implement(duckdbConnector, {
  async complete(config, limits) {
    return { ...config, path: await allowedPath(config.path, limits) };
  },
  async check(c) {
    const { tables } = await listTables(c);
    const { rows } = await query(c, 'select version() as v', []);
    return { server_version: `DuckDB ${String(rows[0].v)}`, found: tables.map((t) => t.table) };
  },
  handlers: {
    'duckdb.list_tables': (_input, c) => listTables(c),
    'duckdb.query': (input, c) => query(c, input.sql, input.params),
  },
});
