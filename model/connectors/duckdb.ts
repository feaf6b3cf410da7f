// A warehouse: read-only SQL with DuckDB over Parquet, CSV and JSON files in a directory on the workers (each file
// a table named after it), or over a DuckDB database file. Only directories the operator allows
// (CADRE_WAREHOUSE_DIRS) can be connected: a workspace admin must not be able to read the workers' own files.
import { z } from 'zod';
import { connectionArg, defineConnector } from './definition';

const connection = connectionArg('a DuckDB warehouse');
const sqlValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const duckdbConfigSchema = z.object({
  path: z
    .string()
    .min(1)
    .max(1000)
    .describe('a directory of .parquet, .csv and .json files, or a .duckdb database file, on the workers'),
  /** A query answering more rows than this fails, and says so, rather than truncating silently. */
  row_limit: z.number().int().min(1).max(100_000).default(1000),
  statement_timeout_ms: z.number().int().min(100).max(300_000).default(30_000),
});
export type DuckdbConfig = z.infer<typeof duckdbConfigSchema>;

export const duckdbConnector = defineConnector({
  kind: 'duckdb',
  label: 'DuckDB warehouse',
  category: 'database',
  description: 'Read-only SQL over Parquet, CSV and JSON files or a DuckDB database file.',
  config: duckdbConfigSchema,
  credentials: z.object({}).default({}),
  tools: {
    'duckdb.list_tables': {
      name: 'duckdb.list_tables',
      description: "List the tables of a warehouse connection (its files' tables) with their columns and types.",
      input: z.object({ connection }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'duckdb.query': {
      name: 'duckdb.query',
      description:
        'Run one read-only SQL statement (DuckDB dialect) on a warehouse connection, with ? placeholders bound to ' +
        "params in order; answers the rows (at most the connection's row limit).",
      input: z.object({
        connection,
        sql: z.string().min(1).max(100_000),
        params: z.array(sqlValue).max(1000).default([]),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
  },
  events: {},
  where: (config) => config.path,
});
