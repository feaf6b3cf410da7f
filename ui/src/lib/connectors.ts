// The connector kinds the console can connect, and the settings form each one fills in. A new kind (an MCP
// server, an OAuth 2.0 API) adds its entry here and its form component beside SqlSettings.svelte.

export type SettingsForm = 'sql';

export interface ConnectorKind {
  kind: string;
  label: string;
  form: SettingsForm;
  defaultPort?: number;
}

export const connectorKinds: ConnectorKind[] = [
  { kind: 'postgres', label: 'PostgreSQL', form: 'sql', defaultPort: 5432 },
  { kind: 'mysql', label: 'MySQL / MariaDB', form: 'sql', defaultPort: 3306 },
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

/** The settings of a saved SQL connection, to fill its edit form. */
export function sqlValuesOf(config: {
  host: string;
  port?: number;
  database: string;
  user: string;
  ssl: boolean;
  allow_writes: boolean;
  row_limit: number;
  statement_timeout_ms: number;
}): SqlFormValues {
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
