// The connector kinds the console can connect, and the settings form each one fills in. A new kind (an OAuth 2.0
// API) adds its entry here and its form component beside SqlSettings.svelte and McpSettings.svelte.
import type { Schemas } from '$api/client';

export type SettingsForm = 'sql' | 'mcp';

export interface ConnectorKind {
  kind: string;
  label: string;
  form: SettingsForm;
  defaultPort?: number;
}

export const connectorKinds: ConnectorKind[] = [
  { kind: 'postgres', label: 'PostgreSQL', form: 'sql', defaultPort: 5432 },
  { kind: 'mysql', label: 'MySQL / MariaDB', form: 'sql', defaultPort: 3306 },
  { kind: 'mcp', label: 'MCP server', form: 'mcp' },
];

export const connectorKind = (kind: string): ConnectorKind | undefined => connectorKinds.find((k) => k.kind === kind);

/** A SQL connection's settings as its form holds them: what a refused attempt gives back (never the password). */
export interface SqlFormValues {
  host: string;
  port: string;
  database: string;
  user: string;
  ssl: boolean;
  allow_writes: boolean;
  row_limit: string;
  statement_timeout_ms: string;
}

export const blankSqlValues: SqlFormValues = {
  host: '',
  port: '',
  database: '',
  user: '',
  ssl: false,
  allow_writes: false,
  row_limit: '1000',
  statement_timeout_ms: '10000',
};

type ConnectionConfig = Schemas['Connection']['config'];
export type SqlConnectionConfig = Extract<ConnectionConfig, { host: string }>;
export type McpConnectionConfig = Extract<ConnectionConfig, { transport: string }>;

export const isSqlConfig = (config: ConnectionConfig): config is SqlConnectionConfig => 'host' in config;

/** Where a connection points, in a few words: host and database, or an MCP server's URL or command. */
export function whereOf(config: ConnectionConfig): { at: string; detail: string } {
  if (isSqlConfig(config))
    return {
      at: `${config.host}${config.port ? `:${config.port}` : ''}`,
      detail: `database ${config.database} as ${config.user}`,
    };
  if (config.transport === 'http') return { at: config.url, detail: 'over HTTP' };
  return { at: [config.command, ...config.args].join(' '), detail: 'a command the workers start (stdio)' };
}

/** The settings of a saved SQL connection, to fill its edit form. */
export function sqlValuesOf(config: SqlConnectionConfig): SqlFormValues {
  return {
    host: config.host,
    port: config.port === undefined ? '' : String(config.port),
    database: config.database,
    user: config.user,
    ssl: config.ssl,
    allow_writes: config.allow_writes,
    row_limit: String(config.row_limit),
    statement_timeout_ms: String(config.statement_timeout_ms),
  };
}

/**
 * An MCP server's settings as its form holds them. The headers' names come back to a refused form, their values
 * (tokens) never; `args` is one argument per line.
 */
export interface McpFormValues {
  transport: 'http' | 'stdio';
  url: string;
  header_names: string[];
  command: string;
  args: string;
}

export const blankMcpValues: McpFormValues = { transport: 'http', url: '', header_names: [], command: '', args: '' };

/** The settings of a saved MCP connection, to fill its edit form (its headers are sealed: none come back). */
export function mcpValuesOf(config: McpConnectionConfig): McpFormValues {
  return config.transport === 'http'
    ? { ...blankMcpValues, url: config.url }
    : { ...blankMcpValues, transport: 'stdio', command: config.command, args: config.args.join('\n') };
}
