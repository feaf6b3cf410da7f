// Connections as the API accepts them: a name agents refer to, a connector kind, what is not secret (config) and the
// credentials (sealed at rest, never answered). Pure, so the API, the worker and the agent checks share it.
import { z } from 'zod';
import type { McpStdioServers } from '../cadre.config';
import { connectorDefinitions, connectorKinds, type ConnectorKind } from './connectors';

export const sqlKinds = ['postgres', 'mysql'] as const;
export type SqlKind = (typeof sqlKinds)[number];
/** Kinds with settings of their own here; the connectors of model/connectors/ bring theirs. */
export const frameworkKinds = [...sqlKinds, 'mcp', 'openapi', 'oauth2'] as const;
export const connectionKinds = [...frameworkKinds, ...connectorKinds] as const;
export type ConnectionKind = (typeof frameworkKinds)[number] | ConnectorKind;
export const isSqlKind = (kind: string): kind is SqlKind => (sqlKinds as readonly string[]).includes(kind);
/** `pending_authorization`: an OAuth 2.0 connection made but not yet authorized at its provider. */
export const connectionStatuses = [
  'connected',
  'pending_authorization',
  'needs_reauthorization',
  'revoked',
  'failing',
] as const;
export type ConnectionStatus = (typeof connectionStatuses)[number];

export const connectionName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,59}$/, 'lower-case letters, digits, - and _, starting with a letter (at most 60)');

/** A SQL database: PostgreSQL, or MySQL and MariaDB. */
export const sqlConfigSchema = z.object({
  host: z.string().trim().min(1).max(253).meta({ format: 'hostname', description: 'a host name or IP address' }),
  port: z.number().int().min(1).max(65535).optional(),
  database: z.string().min(1).max(128),
  user: z.string().min(1).max(128),
  ssl: z.boolean().default(false),
  /** Inserts and updates are refused unless the connection grants them. */
  allow_writes: z.boolean().default(false),
  /** A query answering more rows than this fails, and says so, rather than truncating silently. */
  row_limit: z.number().int().min(1).max(100_000).default(1000),
  statement_timeout_ms: z.number().int().min(100).max(300_000).default(10_000),
});
export type SqlConfig = z.infer<typeof sqlConfigSchema>;

export const sqlCredentialsSchema = z.object({ password: z.string().max(1000).default('') });
export type SqlCredentials = z.infer<typeof sqlCredentialsSchema>;

export const defaultPorts: Record<SqlKind, number> = { postgres: 5432, mysql: 3306 };

/**
 * A Model Context Protocol server: over streamable HTTP at a URL, or one of the servers the operator declares
 * (CADRE_MCP_STDIO_SERVERS), which the worker starts and talks to over stdio. A connection picks such a server by
 * name and nothing more: a workspace admin is untrusted, so no command, argument or environment comes from them.
 */
export const mcpConfigSchema = z.discriminatedUnion('transport', [
  z.object({ transport: z.literal('http'), url: z.string().url().max(2000) }),
  z.strictObject(
    {
      transport: z.literal('stdio'),
      server: z
        .string({ error: 'name one of the servers the operator declares (GET /v1/mcp-servers lists them)' })
        .regex(/^[a-z][a-z0-9_-]{0,59}$/, 'the name of a server the operator declares (GET /v1/mcp-servers)')
        .describe('One of the stdio servers the operator declares (GET /v1/mcp-servers lists them).'),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `a stdio connection names one of the servers the operator declares ("server"), never a command, ` +
            `arguments or anything else (${issue.keys.map((k) => `"${k}"`).join(', ')}): see GET /v1/mcp-servers`
          : undefined,
    },
  ),
]);
/**
 * A stdio connection stored before servers were declared by the operator: it names a command and its arguments. It
 * is answered as stored but never runs; using or testing it asks for one of the declared servers instead.
 */
export const legacyMcpStdioConfigSchema = z.object({
  transport: z.literal('stdio'),
  command: z.string(),
  args: z.array(z.string()),
});
export type McpConfig = z.infer<typeof mcpConfigSchema>;
/** An MCP connection's settings as a row may hold them (the worker refuses the legacy ones). */
export type StoredMcpConfig = McpConfig | z.infer<typeof legacyMcpStdioConfigSchema>;
/** Headers sent with every HTTP request to the server (an Authorization bearer token, an API key header). */
export const mcpCredentialsSchema = z.object({
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'a header name'), z.string().max(4000)).default({}),
});
export type McpCredentials = z.infer<typeof mcpCredentialsSchema>;

/** How a REST API imported from its OpenAPI document is called: the secret (key, token, password) is credentials. */
export const openApiAuthSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('none') }),
  z.object({
    type: z.literal('api_key'),
    in: z.enum(['header', 'query']),
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'a header or query parameter name'),
  }),
  z.object({ type: z.literal('bearer') }),
  z.object({ type: z.literal('basic'), username: z.string().min(1).max(200) }),
  /** The access token of an oauth2 connection of the workspace (refreshed as it expires, and on a 401). */
  z.object({ type: z.literal('oauth2'), connection: connectionName }),
]);

/**
 * A REST API from its OpenAPI 3.x document: given whole, or fetched once from `document_url` when the connection is
 * made (and kept, so runs never depend on the document's host). Each chosen operation becomes a tool.
 */
export const openApiConfigSchema = z
  .object({
    document_url: z.string().url().max(2000).optional(),
    document: z.record(z.string(), z.unknown()).optional(),
    /** The API's address; the document's first server when absent. */
    base_url: z.string().url().max(2000).optional(),
    /** Operation ids that become tools; every operation when absent. */
    operations: z.array(z.string().min(1).max(200)).min(1).max(500).optional(),
    auth: openApiAuthSchema.default({ type: 'none' }),
  })
  .refine((c) => c.document !== undefined || c.document_url !== undefined, 'give "document" or "document_url"')
  // The same rule for the OpenAPI document (JSON Schema cannot read a refine).
  .meta({ anyOf: [{ required: ['document'] }, { required: ['document_url'] }] });
export type OpenApiConfig = z.infer<typeof openApiConfigSchema>;
/** The API key, bearer token or basic password its auth sends (nothing for oauth2: that connection has the tokens). */
export const openApiCredentialsSchema = z.object({ secret: z.string().max(4000).optional() });
export type OpenApiCredentials = z.infer<typeof openApiCredentialsSchema>;

/**
 * An account at an OAuth 2.0 provider, authorized by a person who signs in there (authorization code with PKCE);
 * other connectors act with its access token. The provider is found by discovery from its issuer URL, or named by
 * its endpoints.
 */
const endpointUrl = z.url({ protocol: /^https?$/, error: 'an http or https URL' }).max(2000);
/** An OAuth scope token (RFC 6749 §3.3). */
const scopeToken = z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,200}$/, 'a scope: printable, no spaces or quotes');
const oauth2Common = {
  client_id: z.string().min(1).max(500),
  scopes: z.array(scopeToken).max(50).default([]),
  /** Sent as `audience` with the authorization and token requests (Auth0 and others ask for it). */
  audience: z.string().min(1).max(2000).optional(),
};
export const oauth2ConfigSchema = z.union([
  z.object({
    issuer: endpointUrl.describe("The provider's issuer URL (its /.well-known/ metadata is discovered)."),
    ...oauth2Common,
  }),
  z.object({
    authorization_endpoint: endpointUrl,
    token_endpoint: endpointUrl,
    /** RFC 7009: where tokens are revoked when the connection is removed. */
    revocation_endpoint: endpointUrl.optional(),
    ...oauth2Common,
  }),
]);
export type OAuth2Config = z.infer<typeof oauth2ConfigSchema>;

/** The provider's host: where its issuer or token endpoint is. */
const providerHost = (config: OAuth2Config) =>
  new URL('issuer' in config ? config.issuer : config.token_endpoint).hostname.toLowerCase();

/**
 * Why an account's access token may not go to `destination`, if it may not: a token goes only to its provider's own
 * hosts (the provider's host or a sibling under the same parent, as api.hubapi.com beside app.hubapi.com or
 * www.googleapis.com beside oauth2.googleapis.com), so an admin cannot point a connector at a server of their own
 * and collect the tokens of accounts that people authorized.
 */
export function tokenDestinationRefusal(account: string, config: OAuth2Config, destination: string) {
  const provider = providerHost(config);
  const host = new URL(destination).hostname.toLowerCase();
  const labels = provider.split('.');
  const isAddress = /^[\d.]+$|:/.test(provider); // an IP address has no parent domain
  const parent = labels.length >= 3 && !isAddress ? labels.slice(1).join('.') : provider;
  if (host === provider || host === parent || host.endsWith(`.${parent}`)) return undefined;
  return `the access token of account "${account}" goes only to its provider's hosts (${provider}), not to ${host}: point the connection at the provider's API`;
}
/** What the admin gives: the client's secret (empty for a public client, which relies on PKCE alone). */
export const oauth2CredentialsSchema = z.object({ client_secret: z.string().max(2000).default('') });
/** The tokens the service got from the provider: stored sealed, never accepted from or answered to the API. */
export const oauth2TokensSchema = z.object({
  access_token: z.string(),
  refresh_token: z.string().optional(),
  /** Milliseconds since the epoch; unset when the provider did not say. */
  expires_at: z.number().optional(),
  token_type: z.string().optional(),
  /** The scopes the provider granted, which may be fewer than those asked for. */
  scopes: z.array(z.string()).default([]),
});
export type OAuth2Tokens = z.infer<typeof oauth2TokensSchema>;
/** The sealed credentials of an oauth2 connection: the client secret, and the tokens once authorized. */
export const oauth2StoredCredentialsSchema = oauth2CredentialsSchema.extend({ tokens: oauth2TokensSchema.optional() });
export type OAuth2Credentials = z.infer<typeof oauth2StoredCredentialsSchema>;

/** Settings as a connection row holds them (an MCP one possibly a legacy command, which never runs). */
export type ConnectionConfig =
  | SqlConfig
  | StoredMcpConfig
  | OpenApiConfig
  | OAuth2Config
  | { [K in ConnectorKind]: z.infer<(typeof connectorDefinitions)[K]['config']> }[ConnectorKind];

/** What is not secret, and what is, by kind: the API validates with these, the worker opens with them. */
export const connectionSchemas = {
  postgres: { config: sqlConfigSchema, credentials: sqlCredentialsSchema },
  mysql: { config: sqlConfigSchema, credentials: sqlCredentialsSchema },
  mcp: { config: mcpConfigSchema, credentials: mcpCredentialsSchema },
  openapi: { config: openApiConfigSchema, credentials: openApiCredentialsSchema },
  oauth2: { config: oauth2ConfigSchema, credentials: oauth2StoredCredentialsSchema },
  ...(Object.fromEntries(
    connectorKinds.map((kind) => [
      kind,
      { config: connectorDefinitions[kind].config, credentials: connectorDefinitions[kind].credentials },
    ]),
  ) as unknown as { [K in ConnectorKind]: { config: z.ZodTypeAny; credentials: z.ZodTypeAny } }),
} satisfies Record<ConnectionKind, { config: z.ZodTypeAny; credentials: z.ZodTypeAny }>;

export const createConnectionSchema = z.discriminatedUnion('kind', [
  z.object({
    name: connectionName,
    kind: z.enum(sqlKinds),
    config: sqlConfigSchema,
    credentials: sqlCredentialsSchema,
  }),
  z.object({
    name: connectionName,
    kind: z.literal('mcp'),
    config: mcpConfigSchema,
    credentials: mcpCredentialsSchema.default({ headers: {} }),
  }),
  z.object({
    name: connectionName,
    kind: z.literal('openapi'),
    config: openApiConfigSchema,
    credentials: openApiCredentialsSchema.default({}),
  }),
  z.object({
    name: connectionName,
    kind: z.literal('oauth2'),
    config: oauth2ConfigSchema,
    credentials: oauth2CredentialsSchema.default({ client_secret: '' }),
  }),
  ...connectorKinds.map((kind) =>
    z.object({
      name: connectionName,
      kind: z.literal(kind),
      config: connectorDefinitions[kind].config,
      credentials: connectorDefinitions[kind].credentials,
    }),
  ),
]);

/** New settings (merged over the current ones, then checked against the connection's kind) or new credentials. */
export const updateConnectionSchema = z
  .object({
    config: z.record(z.string(), z.unknown()).optional(),
    credentials: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((b) => b.config !== undefined || b.credentials !== undefined, 'change "config" or "credentials"')
  .meta({ anyOf: [{ required: ['config'] }, { required: ['credentials'] }] });

/** What the operator declares for stdio MCP servers (cadre.config.ts `mcp`). */
export interface McpStdio {
  /** The servers connections may name (CADRE_MCP_STDIO_SERVERS). */
  stdioServers: McpStdioServers;
  /** Whom they run as when this process runs as root (CADRE_MCP_STDIO_USER): a user name or uid[:gid]. */
  stdioUser: string;
  /** Where each started server gets a directory of its own. */
  stdioDir: string;
}

export interface McpLimits {
  /** Hosts reachable although private or internal (CADRE_HTTP_ALLOW_HOSTS). */
  allowHosts: readonly string[];
  /** The stdio servers the operator declares (CADRE_MCP_STDIO_SERVERS) and how they run; unset → none. */
  mcpStdio?: McpStdio;
}

/** What the operator allows connections to reach and start (CADRE_HTTP_ALLOW_HOSTS, CADRE_MCP_STDIO_SERVERS, ...). */
export interface ConnectorLimits extends McpLimits {
  /**
   * The roots of the directories DuckDB warehouse connections read (CADRE_WAREHOUSE_DIRS): a workspace's connection
   * reads only its own directory under each, `<root>/<workspace id>/`.
   */
  warehouseDirs?: readonly string[];
  /**
   * The workspace whose connection is checked or opened (set wherever one is): what is only the workspace's own, its
   * warehouse directories, is found by it. Unset → a warehouse connection is refused.
   */
  workspaceId?: string;
}

/** What a check found: the server's name and version, and what it offers (an MCP server's tools, tables, ...). */
export interface ConnectionFound {
  server_version?: string;
  /** The tools an MCP server or a REST API offers, by name. */
  tools?: string[];
  /** An OAuth 2.0 provider's issuer. */
  issuer?: string;
  /** What the connection reaches: a warehouse's tables, a bucket's prefix, a mailbox's folders. */
  found?: string[];
}

/**
 * The current access token of the workspace's oauth2 connection `account` (the API's checks have no run), refused
 * when `sentTo` is not one of its provider's hosts.
 */
export type AccountToken = (account: string, sentTo?: string) => Promise<string>;

/** The connection being checked: its name, for messages, and its account's token (a connector acting through one). */
export interface CheckedConnection {
  name?: string;
  accountToken?: AccountToken;
}

/** A tool an agent can call through a connection, as the editor offers it. */
export interface ConnectionTool {
  /** The agent tool's name: `mcp.<connection>.<tool>`, or `sql.<tool>`. */
  name: string;
  /** What the server calls it (an MCP server's own name); for SQL connections the same as `name`. */
  tool: string;
  description: string;
  input_schema: Record<string, unknown>;
}
