// "Does this connection work?": connects with the given settings and credentials the way a run would, and says what
// it found (the server's version, the tools it offers) or throws the reason. The API runs it before a connection is
// saved or changed, and when someone presses Test.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type {
  CheckedConnection,
  ConnectionFound,
  ConnectionKind,
  ConnectionTool,
  ConnectorLimits,
  McpLimits,
  McpCredentials,
  OAuth2Config,
  OAuth2Credentials,
  OpenApiConfig,
  SqlConfig,
  SqlCredentials,
  StoredMcpConfig,
} from '../../model/connection';
import { completeOpenApiConfig } from './openapi/document';
import { openApiOperations } from '../../model/openapi-document';
import { connectorToolsOf } from '../../model/connection-tools';
import { defaultPorts, isSqlKind } from '../../model/connection';
import { toolDefinitions } from '../../model/tools';
import type { ToolDefinition } from '../../model/tool-definition';
import { connectorOf, isConnectorKind, type ConnectorKind } from '../../model/connectors';
import { connectorImplementations } from '.';
import type { OpenedConnection } from './connector';
import { publicAddress } from '../tools/ssrf-guard';
import { buildSqlClient, testSqlClient } from './sql/client';
import { connectMcp, listMcpTools } from './mcp/client';
import { oauthProvider } from './oauth/provider';

/** A connection being made or tested, opened for its connector's check (no run: not kept between calls). */
function openedForCheck(
  kind: ConnectorKind,
  config: unknown,
  credentials: unknown,
  limits: ConnectorLimits,
  of: CheckedConnection,
): OpenedConnection {
  const definition = connectorOf(kind);
  const account = definition.account?.(config);
  const { accountToken } = of;
  return {
    name: of.name ?? kind,
    kind,
    config,
    credentials,
    version: `check:${randomUUID()}`,
    limits,
    accountToken:
      account === undefined || !accountToken
        ? undefined
        : () => accountToken(account, definition.tokenDestination?.(config)),
  };
}

export async function checkConnection(
  kind: ConnectionKind,
  config: unknown,
  credentials: unknown,
  limits: ConnectorLimits,
  of: CheckedConnection = {},
): Promise<ConnectionFound> {
  if (isConnectorKind(kind))
    return connectorImplementations[kind].check(openedForCheck(kind, config, credentials, limits, of));
  if (isSqlKind(kind)) {
    const sql = config as SqlConfig;
    const address = await publicAddress(sql.host, sql.port ?? defaultPorts[kind], limits.allowHosts);
    const client = buildSqlClient(kind, sql, (credentials as SqlCredentials).password, address);
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
  const client = await connectMcp(config as StoredMcpConfig, credentials as McpCredentials, limits);
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
  limits: ConnectorLimits,
): Promise<Record<string, unknown>> {
  if (isConnectorKind(kind)) {
    const complete = connectorImplementations[kind].complete;
    return complete ? ((await complete(config, limits)) as Record<string, unknown>) : config;
  }
  return kind === 'openapi' ? completeOpenApiConfig(config as OpenApiConfig, limits.allowHosts) : config;
}

const toolEntry = (t: ToolDefinition): ConnectionTool => ({
  name: t.name,
  tool: t.name,
  description: t.description,
  input_schema: z.toJSONSchema(t.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
});

const sqlToolNames = ['sql.list_tables', 'sql.query', 'sql.insert', 'sql.update'];

/** SQL connections that do not allow writes offer only the reading tools. */
const writingSqlTools = new Set(['sql.insert', 'sql.update']);

/**
 * The tools a connection offers its agents. An MCP server is asked (connecting as a run would, so an unreachable
 * one throws the reason); a SQL connection's are the built-in sql.* tools it allows.
 */
export async function listConnectionTools(
  connection: { name: string; kind: ConnectionKind; config: unknown },
  credentials: unknown,
  limits: McpLimits,
): Promise<ConnectionTool[]> {
  if (isConnectorKind(connection.kind)) return connectorToolsOf(connection.kind, connection.config).map(toolEntry);
  if (isSqlKind(connection.kind)) {
    const writes = (connection.config as SqlConfig).allow_writes;
    return sqlToolNames
      .filter((name) => writes || !writingSqlTools.has(name))
      .map((name) => toolEntry((toolDefinitions as Record<string, ToolDefinition>)[name]));
  }
  if (connection.kind === 'openapi') {
    const api = connection.config as OpenApiConfig;
    return openApiOperations(api.document!, api.operations).map((op) => ({
      name: `api.${connection.name}.${op.id}`,
      tool: op.id,
      description: op.description,
      input_schema: op.inputSchema,
    }));
  }
  if (connection.kind === 'oauth2') return []; // an account other connectors act through
  const client = await connectMcp(connection.config as StoredMcpConfig, credentials as McpCredentials, limits);
  try {
    return (await listMcpTools(client)).map((t) => ({
      name: `mcp.${connection.name}.${t.name}`,
      tool: t.name,
      description: t.description ?? t.title ?? '',
      input_schema: t.inputSchema as Record<string, unknown>,
    }));
  } finally {
    await client.close();
  }
}
