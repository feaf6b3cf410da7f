// The connector kinds the console can connect, and the settings form each one fills in (one component per form in
// components/connections/).
import type { Schemas } from '$api/client';

/** `connector`: a form drawn from the connector's JSON Schema (components/connections/ConnectorSettings.svelte). */
export type SettingsForm = 'sql' | 'mcp' | 'openapi' | 'oauth2' | 'connector';

/** A connector as GET /v1/connectors answers it: its settings' and credentials' schemas, tools and events. */
export type Connector = Schemas['Connector'];

export interface ConnectorKind {
  kind: Schemas['Connection']['kind'];
  label: string;
  form: SettingsForm;
  defaultPort?: number;
}

/** The kinds with forms of their own; the connectors' kinds come from the API (kindsWith). */
export const connectorKinds: ConnectorKind[] = [
  { kind: 'postgres', label: 'PostgreSQL', form: 'sql', defaultPort: 5432 },
  { kind: 'mysql', label: 'MySQL / MariaDB', form: 'sql', defaultPort: 3306 },
  { kind: 'mcp', label: 'MCP server', form: 'mcp' },
  { kind: 'openapi', label: 'REST API (OpenAPI)', form: 'openapi' },
  { kind: 'oauth2', label: 'OAuth 2.0 account', form: 'oauth2' },
];

/** Every kind the console can connect: those with forms of their own, then the API's connectors by label. */
export const kindsWith = (connectors: Connector[]): ConnectorKind[] => [
  ...connectorKinds,
  ...connectors
    .map((c) => ({ kind: c.kind, label: c.label, form: 'connector' as const }))
    .sort((a, b) => a.label.localeCompare(b.label)),
];

export const connectorKind = (kind: string, connectors: Connector[] = []): ConnectorKind | undefined =>
  kindsWith(connectors).find((k) => k.kind === kind);

type ConnectionConfig = Schemas['Connection']['config'];
export type SqlConnectionConfig = Extract<ConnectionConfig, { host: string }>;
export type McpConnectionConfig = Extract<ConnectionConfig, { transport: string }>;
export type OpenApiConnectionConfig = Extract<ConnectionConfig, { auth: unknown }>;
export type OAuth2ConnectionConfig = Extract<ConnectionConfig, { client_id: string }>;
export type OpenApiAuth = OpenApiConnectionConfig['auth'];

/**
 * A connection with its settings typed by its kind. The API's schema lists every kind's settings as one union (a
 * connection's kind and config are checked together when it is saved), so the console pairs them here, once.
 */
export type TypedConnection = Omit<Schemas['Connection'], 'kind' | 'config'> &
  (
    | { kind: 'postgres' | 'mysql'; config: SqlConnectionConfig }
    | { kind: 'mcp'; config: McpConnectionConfig }
    | { kind: 'openapi'; config: OpenApiConnectionConfig }
    | { kind: 'oauth2'; config: OAuth2ConnectionConfig }
    | { kind: Connector['kind']; config: Record<string, unknown> }
  );

export const typedConnection = (c: Schemas['Connection']): TypedConnection => c as TypedConnection;

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

/** A REST API's document as connections sum it up (title, version, operations, first server; not the document). */
export type ApiDocumentSummary = NonNullable<Schemas['Connection']['document']>;

/** A REST API's title and version, as its document gives them. */
export function apiTitleOf(document: ApiDocumentSummary | undefined): string | undefined {
  if (!document?.title) return undefined;
  return document.version ? `${document.title} ${document.version}` : document.title;
}

const authWords: Record<OpenApiAuth['type'], string> = {
  none: 'no auth',
  api_key: 'an API key',
  bearer: 'a bearer token',
  basic: 'basic auth',
  oauth2: 'an OAuth 2.0 account',
};

/** Where a connection points, in a few words: host and database, a server's URL or command, an API, a provider. */
export function whereOf(c: TypedConnection): { at: string; detail: string } {
  switch (c.kind) {
    default:
      return { at: c.where, detail: '' };
    case 'postgres':
    case 'mysql':
      return {
        at: `${c.config.host}${c.config.port ? `:${c.config.port}` : ''}`,
        detail: `database ${c.config.database} as ${c.config.user}`,
      };
    case 'mcp':
      if (c.config.transport === 'http') return { at: c.config.url, detail: 'over HTTP' };
      if ('server' in c.config) return { at: c.config.server, detail: 'a server the operator declares (stdio)' };
      return {
        at: [c.config.command, ...c.config.args].join(' '),
        detail: 'a command, no longer allowed: edit it and pick a server the operator declares',
      };
    case 'openapi': {
      const { auth } = c.config;
      const how = auth.type === 'oauth2' ? `as the account “${auth.connection}”` : `with ${authWords[auth.type]}`;
      return {
        at: c.config.base_url ?? c.document?.server_url ?? c.config.document_url ?? 'the given document',
        detail: `${apiTitleOf(c.document) ?? 'a REST API'}, ${how}`,
      };
    }
    case 'oauth2':
      return {
        at: 'issuer' in c.config ? c.config.issuer : c.config.authorization_endpoint,
        detail: `client ${c.config.client_id}`,
      };
  }
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

/** A stdio MCP server the operator declares (GET /v1/mcp-servers): a connection picks one by name. */
export type McpServer = Schemas['McpServer'];

/**
 * An MCP server's settings as its form holds them. The headers' names come back to a refused form, their values
 * (tokens) never; `server` is one the operator declares. `legacy_command`: the command a connection made before
 * servers were declared names, which no longer runs (shown so the person knows what to replace).
 */
export interface McpFormValues {
  transport: 'http' | 'stdio';
  url: string;
  header_names: string[];
  server: string;
  legacy_command?: string;
}

export const blankMcpValues: McpFormValues = { transport: 'http', url: '', header_names: [], server: '' };

/** The settings of a saved MCP connection, to fill its edit form (its headers are sealed: none come back). */
export function mcpValuesOf(config: McpConnectionConfig): McpFormValues {
  if (config.transport === 'http') return { ...blankMcpValues, url: config.url };
  return 'server' in config
    ? { ...blankMcpValues, transport: 'stdio', server: config.server }
    : { ...blankMcpValues, transport: 'stdio', legacy_command: [config.command, ...config.args].join(' ') };
}

/**
 * A REST API's settings as its form holds them (never the secret). The document comes from its URL or is pasted
 * (JSON or YAML text); `operations` is a comma or line list of operation ids, blank for all of them.
 */
export interface OpenApiFormValues {
  source: 'url' | 'document';
  document_url: string;
  document: string;
  base_url: string;
  operations: string;
  auth: OpenApiAuth['type'];
  key_in: 'header' | 'query';
  key_name: string;
  username: string;
  account: string;
}

export const blankOpenApiValues: OpenApiFormValues = {
  source: 'url',
  document_url: '',
  document: '',
  base_url: '',
  operations: '',
  auth: 'none',
  key_in: 'header',
  key_name: '',
  username: '',
  account: '',
};

/**
 * The settings of a saved REST API, to fill its edit form. A pasted document is kept with the connection but not
 * shown again: a blank document keeps it.
 */
export function openApiValuesOf(config: OpenApiConnectionConfig): OpenApiFormValues {
  const { auth } = config;
  return {
    ...blankOpenApiValues,
    source: config.document_url ? 'url' : 'document',
    document_url: config.document_url ?? '',
    base_url: config.base_url ?? '',
    operations: (config.operations ?? []).join(', '),
    auth: auth.type,
    ...(auth.type === 'api_key' ? { key_in: auth.in, key_name: auth.name } : {}),
    ...(auth.type === 'basic' ? { username: auth.username } : {}),
    ...(auth.type === 'oauth2' ? { account: auth.connection } : {}),
  };
}

/** An OAuth 2.0 provider's settings as its form holds them (never the client secret); scopes space-separated. */
export interface OAuth2FormValues {
  discovery: 'issuer' | 'endpoints';
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  revocation_endpoint: string;
  client_id: string;
  scopes: string;
  audience: string;
}

export const blankOAuth2Values: OAuth2FormValues = {
  discovery: 'issuer',
  issuer: '',
  authorization_endpoint: '',
  token_endpoint: '',
  revocation_endpoint: '',
  client_id: '',
  scopes: 'openid offline_access',
  audience: '',
};

export function oauth2ValuesOf(config: OAuth2ConnectionConfig): OAuth2FormValues {
  const common = { client_id: config.client_id, scopes: config.scopes.join(' '), audience: config.audience ?? '' };
  return 'issuer' in config
    ? { ...blankOAuth2Values, ...common, issuer: config.issuer }
    : {
        ...blankOAuth2Values,
        ...common,
        discovery: 'endpoints',
        authorization_endpoint: config.authorization_endpoint,
        token_endpoint: config.token_endpoint,
        revocation_endpoint: config.revocation_endpoint ?? '',
      };
}

/** An OAuth 2.0 account that a person still has to authorize (or authorize again) at its provider. */
export const awaitsAuthorization = (c: TypedConnection) => c.kind === 'oauth2' && c.status !== 'connected';
