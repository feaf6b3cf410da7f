// "Does this connection work?": connects with the given settings and credentials the way a run would, and says what
// it found (the server's version, the tools it offers) or throws the reason. The API runs it before a connection is
// saved or changed, and when someone presses Test.
import type {
  ConnectionKind,
  McpConfig,
  McpCredentials,
  OAuth2Config,
  OAuth2Credentials,
  OpenApiConfig,
  SqlConfig,
  SqlCredentials,
} from '../../model/connection';
import { completeOpenApiConfig, openApiOperations } from './openapi/document';
import { defaultPorts, isSqlKind } from '../../model/connection';
import { assertPublicHost } from '../tools/ssrf-guard';
import { buildSqlClient, testSqlClient } from './sql/client';
import { connectMcp, listMcpTools, type McpLimits } from './mcp/client';
import { oauthProvider } from './oauth/provider';

export interface ConnectionFound {
  server_version?: string;
  /** The tools an MCP server offers, by name. */
  tools?: string[];
  /** An OAuth 2.0 provider's issuer. */
  issuer?: string;
}

export async function checkConnection(
  kind: ConnectionKind,
  config: unknown,
  credentials: unknown,
  limits: McpLimits,
): Promise<ConnectionFound> {
  if (isSqlKind(kind)) {
    const sql = config as SqlConfig;
    await assertPublicHost(sql.host, sql.port ?? defaultPorts[kind], limits.allowHosts);
    const client = buildSqlClient(kind, sql, (credentials as SqlCredentials).password);
    try {
      return await testSqlClient(client);
    } finally {
      await client.knex.destroy();
    }
  }
  if (kind === 'openapi') {
    const api = config as OpenApiConfig;
    const info = (api.document?.info ?? {}) as { title?: string; version?: string };
    return {
      server_version: `${info.title ?? 'API'} ${info.version ?? ''}`.trim(),
      tools: openApiOperations(api.document!, api.operations).map((op) => op.id),
    };
  }
  if (kind === 'oauth2') {
    // Finds the provider (discovery, or the endpoints given); the account is authorized by a person afterwards.
    const provider = await oauthProvider(
      config as OAuth2Config,
      (credentials as OAuth2Credentials).client_secret,
      limits.allowHosts,
    );
    return { issuer: provider.serverMetadata().issuer };
  }
  const client = await connectMcp(config as McpConfig, credentials as McpCredentials, limits);
  try {
    const server = client.getServerVersion();
    const tools = await listMcpTools(client);
    return {
      server_version: server ? `${server.name} ${server.version}` : 'unknown',
      tools: tools.map((t) => t.name),
    };
  } finally {
    await client.close();
  }
}

/** The settings to store: what a kind fetches once when the connection is made (a REST API's document). */
export async function completeConnectionConfig(
  kind: ConnectionKind,
  config: Record<string, unknown>,
  limits: McpLimits,
): Promise<Record<string, unknown>> {
  return kind === 'openapi' ? completeOpenApiConfig(config as OpenApiConfig, limits.allowHosts) : config;
}

/** What a connection's tools may do, in words a person can check before giving it to an agent. */
export function connectionAbilities(kind: ConnectionKind, config: unknown): string[] {
  if (isSqlKind(kind))
    return ['list tables', 'read rows', ...((config as SqlConfig).allow_writes ? ['insert rows', 'update rows'] : [])];
  if (kind === 'openapi') {
    const api = config as OpenApiConfig;
    try {
      return openApiOperations(api.document ?? {}, api.operations).map(
        (op) => `${op.method.toUpperCase()} ${op.path} (${op.id})`,
      );
    } catch {
      return []; // a stored document was checked when it was saved; listing must not fail on it
    }
  }
  if (kind === 'oauth2')
    return [
      `act at the provider as the account that authorized it, within its scopes (${(config as OAuth2Config).scopes.join(' ') || 'none asked'})`,
    ];
  return ["call the server's tools (each asks for approval unless the agent's policy says otherwise)"];
}
