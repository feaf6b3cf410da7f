// Integrations: the workspace's connections. Creating or changing one tests it first, so a connection that is
// listed works; its credentials are sealed at once and never answered, logged or audited.
import { Router } from 'express';
import { jsonSchema, list, obj, ref, type Route } from '../openapi-schemas';
import { z } from 'zod';
import type { Knex } from 'knex';
import {
  ConnectionNameTakenError,
  connectionByName,
  createConnection,
  deleteConnection,
  getConnection,
  listConnections,
  storeConnectionTools,
  updateConnection,
  type ConnectionRow,
} from '../../db/connections';
import type { SecretBox } from '../../db/secret-box';
import {
  connectionSchemas,
  oauth2CredentialsSchema,
  type ConnectionKind,
  type ConnectorLimits,
} from '../../model/connection';
import { connectionAbilities } from '../../model/connection-tools';
import { openApiSummary } from '../../model/openapi-document';
import { McpServerStartError, type Adapters } from '../../services/adapters';
import { auditRequest } from '../audit-request';
import type { Logger } from '../logger';
import { authorizationUrl, currentAccessToken, oauthCredentialsOf, revokeConnectionTokens } from './connection-oauth';
import { connectorKinds, connectorOf, isConnectorKind, type ConnectorKind } from '../../model/connectors';
import { eventsOf } from '../../model/connectors/events';
import { requirePermission } from '../auth';
import { callerMay } from '../../services/caller';
import { ApiError } from '../problem';
import { bodies } from '../request-bodies';
import { jsonBody, param, parseBody } from '../validation';
import { parseQuery, queries } from '../query-params';
import type { RouteDeps } from './agents';

/**
 * A connection as the API answers it. A REST API's document (kilobytes to megabytes) is summed up here, its title,
 * version and number of operations; the document itself is answered by GET /connections/{id}/document.
 */
export function connectionJson(c: ConnectionRow) {
  const config = c.config as Record<string, unknown>;
  const api = c.kind === 'openapi';
  const { document, ...withoutDocument } = config;
  return {
    id: c.id,
    name: c.name,
    kind: c.kind,
    config: api ? withoutDocument : c.config,
    ...(api
      ? { document: openApiSummary(document as Record<string, unknown> | undefined, config.document_url as string) }
      : {}),
    where: whereOf(c.kind, config),
    status: c.status,
    status_detail: c.status_detail,
    can: connectionAbilities(c.kind, c.config),
    events: eventsJson(c.kind),
    created_by: c.created_by,
    created_at: c.created_at,
    updated_at: c.updated_at,
    last_used_at: c.last_used_at,
  };
}

const schemaOf = (schema: z.ZodTypeAny) =>
  z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;

/** A connector as the console draws its form and the editor offers its tools. */
function connectorJson(kind: ConnectorKind) {
  const d = connectorOf(kind);
  return {
    kind,
    label: d.label,
    category: d.category,
    description: d.description,
    config_schema: schemaOf(d.config),
    credentials_schema: schemaOf(d.credentials),
    tools: Object.values(d.tools).map((t) => ({
      name: t.name,
      description: t.description,
      side_effect: t.sideEffect,
      approval_default: t.approvalDefault,
      input_schema: schemaOf(t.input),
    })),
    events: eventsJson(kind),
  };
}

/** What an event trigger on a connection of this kind can wait for, and the options it chooses. */
const eventsJson = (kind: ConnectionKind) =>
  Object.entries(eventsOf(kind)).map(([name, e]) => ({
    name,
    description: e.description,
    options_schema: schemaOf(e.options),
  }));

/** Where a connection points: a host, a server's URL or name, a provider, a mailbox, a bucket. */
function whereOf(kind: ConnectionKind, config: Record<string, unknown>): string {
  if (isConnectorKind(kind)) {
    const parsed = connectorOf(kind).config.safeParse(config);
    return parsed.success ? connectorOf(kind).where(parsed.data) : 'settings to complete';
  }
  if (kind === 'mcp' && config.transport === 'stdio')
    return config.server !== undefined
      ? `the server "${String(config.server)}"`
      : `the command ${String(config.command)} (no longer allowed)`;
  return String(
    config.host ??
      config.url ??
      config.issuer ??
      config.token_endpoint ??
      config.base_url ??
      config.document_url ??
      'the given document',
  );
}

/** Where a connection of this kind points, for messages. */
const target = (kind: ConnectionKind, config: Record<string, unknown>) =>
  `${isConnectorKind(kind) ? connectorOf(kind).label : kind} at ${whereOf(kind, config)}`;

/** The OAuth 2.0 account (an oauth2 connection of the workspace) these settings act through, if any. */
function accountNamed(kind: ConnectionKind, config: Record<string, unknown>): string | undefined {
  if (isConnectorKind(kind)) {
    const parsed = connectorOf(kind).config.safeParse(config);
    return parsed.success ? connectorOf(kind).account?.(parsed.data) : undefined;
  }
  const auth = config.auth as { type?: string; connection?: string } | undefined;
  return kind === 'openapi' && auth?.type === 'oauth2' ? auth.connection : undefined;
}

/**
 * The stored settings a change is merged over. An MCP server's are its transport's alone: a change of transport
 * starts afresh, and the command a stdio connection named before servers were declared by the operator is dropped
 * (a change that names a server replaces it; one that does not is refused for lacking a server).
 */
function mergedOver(current: ConnectionRow, patch: Record<string, unknown> | undefined): Record<string, unknown> {
  const config = current.config as Record<string, unknown>;
  if (current.kind !== 'mcp') return config;
  if (patch?.transport !== undefined && patch.transport !== config.transport) return {};
  const { command: _command, args: _args, ...kept } = config;
  return kept;
}

export function connectionRoutes(
  deps: RouteDeps & {
    secrets: SecretBox;
    connectors: ConnectorLimits;
    adapters: Pick<Adapters, 'connections' | 'oauth'>;
    logger?: Logger;
  },
): Router {
  const { knex, secrets } = deps;
  const {
    check: checkConnection,
    complete: completeConnectionConfig,
    listTools: listConnectionTools,
  } = deps.adapters.connections;
  const r = Router();
  const body = jsonBody(deps.bodyLimit);
  const load = async (k: Knex, workspaceId: string, id: string) => {
    const c = await getConnection(k, workspaceId, id);
    if (!c) throw new ApiError(404, 'connection_not_found', `no connection ${id} in this workspace`);
    return c;
  };
  const credentialsOf = (c: ConnectionRow) =>
    connectionSchemas[c.kind].credentials.parse(JSON.parse(secrets.open(c.credentials_sealed)));

  /**
   * Completes the settings (a REST API's document fetched once) and connects as a run would; 422 connection_failed
   * with the reason when either fails. Answers the settings to store and what was found.
   */
  /** Asks an MCP server for its tools now (with the connection's stored headers) and keeps the list. */
  const listToolsNow = async (c: ConnectionRow) => {
    const config = c.config as Record<string, unknown>;
    const tools = await failingAs(c.kind, config, () => listConnectionTools(c, credentialsOf(c), deps.connectors));
    const listedAt = await storeConnectionTools(knex, c.id, tools as unknown as Record<string, unknown>[]);
    return { data: tools, listed_at: listedAt, next_cursor: null };
  };

  const tryConnecting = (
    c: { workspaceId: string; name: string; kind: ConnectionKind },
    given: Record<string, unknown>,
    credentials: unknown,
  ) =>
    failingAs(c.kind, given, async () => {
      // What is the workspace's own (its warehouse directories) is found by the workspace.
      const limits = { ...deps.connectors, workspaceId: c.workspaceId };
      const config = await completeConnectionConfig(c.kind, given, limits);
      const accountToken = (account: string, sentTo?: string) =>
        currentAccessToken(knex, secrets, c.workspaceId, account, sentTo);
      const found = await checkConnection(c.kind, config, credentials, limits, { name: c.name, accountToken });
      return { config, found };
    });

  async function failingAs<T>(kind: ConnectionKind, config: Record<string, unknown>, attempt: () => Promise<T>) {
    try {
      return await attempt();
    } catch (err) {
      // A server that would not start says why with the end of its stderr: that is kept, the rest is one line.
      const reason =
        err instanceof McpServerStartError
          ? err.message.slice(0, 5000)
          : (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300);
      throw new ApiError(422, 'connection_failed', `could not connect to ${target(kind, config)}: ${reason}`);
    }
  }

  /** A connection that acts through an OAuth 2.0 account names one of the workspace's oauth2 connections. */
  async function checkAccount(workspaceId: string, kind: ConnectionKind, config: Record<string, unknown>) {
    const name = accountNamed(kind, config);
    if (name === undefined) return;
    const account = await connectionByName(knex, workspaceId, name);
    if (account?.kind !== 'oauth2')
      throw new ApiError(
        422,
        'unknown_connection',
        `the workspace has no OAuth 2.0 connection "${name}": connect the account first, then name it`,
      );
  }

  r.get('/connectors', requirePermission('read'), (_req, res) => {
    res.json({ data: connectorKinds.map(connectorJson), next_cursor: null });
  });

  // The stdio MCP servers the operator declares, which a connection picks by name: names and descriptions only
  // (their commands, arguments and environments stay the operator's).
  r.get('/mcp-servers', requirePermission('read'), (_req, res) => {
    const servers = Object.entries(deps.connectors.mcpStdio?.stdioServers ?? {});
    res.json({
      data: servers.map(([name, s]) => ({ name, description: s.description ?? null })),
      next_cursor: null,
    });
  });

  r.get('/connections', requirePermission('read'), async (req, res) => {
    const page = await listConnections(knex, req.auth!.workspace.id, parseQuery(queries.listConnections, req.query));
    res.json({ data: page.data.map(connectionJson), next_cursor: page.next_cursor });
  });

  r.post('/connections', requirePermission('admin'), ...body, async (req, res) => {
    const input = parseBody(bodies.createConnection, req.body);
    await checkAccount(req.auth!.workspace.id, input.kind, input.config);
    const { config } = await tryConnecting(
      { workspaceId: req.auth!.workspace.id, name: input.name, kind: input.kind },
      input.config,
      input.credentials,
    );
    // An OAuth 2.0 account is authorized by a person at the provider afterwards (the authorization_url answered).
    const oauth = input.kind === 'oauth2';
    let created: ConnectionRow;
    try {
      created = await createConnection(knex, {
        workspace_id: req.auth!.workspace.id,
        name: input.name,
        kind: input.kind,
        config: config as ConnectionRow['config'],
        credentials_sealed: secrets.seal(JSON.stringify(input.credentials)),
        created_by: req.auth!.actor,
        ...(oauth
          ? { status: 'pending_authorization', status_detail: 'not authorized yet: authorize it in Integrations' }
          : {}),
      });
    } catch (err) {
      if (err instanceof ConnectionNameTakenError)
        throw new ApiError(409, 'connection_name_taken', `the workspace already has a connection "${input.name}"`);
      throw err;
    }
    await auditRequest(knex, req, 'connection.created', created.name, { kind: created.kind });
    // An MCP server's tools are listed as an admin makes it, for those who may only read them.
    if (created.kind === 'mcp') await listToolsNow(created).catch(() => undefined);
    res
      .status(201)
      .location(`/v1/connections/${created.id}`)
      .json({
        ...connectionJson(created),
        ...(oauth ? { authorization_url: await authorizationUrl(deps, created, req.auth!.actor) } : {}),
      });
  });

  // OAuth 2.0: a new link to the provider's consent page (to authorize for the first time, or again).
  r.post('/connections/:id/authorize', requirePermission('admin'), async (req, res) => {
    const c = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    if (c.kind !== 'oauth2')
      throw new ApiError(
        409,
        'not_oauth',
        `connection "${c.name}" is ${c.kind}: only oauth2 connections are authorized`,
      );
    res.json({ authorization_url: await authorizationUrl(deps, c, req.auth!.actor) });
  });

  r.get('/connections/:id', requirePermission('read'), async (req, res) => {
    res.json(connectionJson(await load(knex, req.auth!.workspace.id, param(req, 'id'))));
  });

  // A REST API's OpenAPI document, as it was fetched or given (the connection's answers only sum it up).
  r.get('/connections/:id/document', requirePermission('read'), async (req, res) => {
    const c = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    const { document } = c.config as { document?: unknown };
    if (c.kind !== 'openapi' || document === undefined)
      throw new ApiError(
        409,
        'not_openapi',
        `connection "${c.name}" is ${c.kind}: only REST API (openapi) connections have a document`,
      );
    res.json(document);
  });

  // New settings or credentials (a rotated password): tested before they replace the old ones.
  r.patch('/connections/:id', requirePermission('admin'), ...body, async (req, res) => {
    const current = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    const patch = parseBody(bodies.updateConnection, req.body);
    const schemas = connectionSchemas[current.kind];
    const merged = { ...mergedOver(current, patch.config), ...patch.config } as Record<string, unknown>;
    // A new document_url is fetched again, unless the document itself comes with it.
    if (patch.config?.document_url !== undefined && patch.config.document === undefined) delete merged.document;
    const given = parseBody(schemas.config, merged) as Record<string, unknown>;
    await checkAccount(current.workspace_id, current.kind, given);
    const oauth = current.kind === 'oauth2';
    // An oauth2 connection's tokens come from its provider only: the API takes its client secret, never tokens.
    const credentials = patch.credentials
      ? oauth
        ? { ...oauthCredentialsOf(secrets, current), ...parseBody(oauth2CredentialsSchema, patch.credentials) }
        : parseBody(
            schemas.credentials,
            // A connector's secrets change one at a time: those not given are kept.
            isConnectorKind(current.kind)
              ? { ...(credentialsOf(current) as object), ...patch.credentials }
              : patch.credentials,
          )
      : credentialsOf(current);
    const { config } = await tryConnecting(
      { workspaceId: current.workspace_id, name: current.name, kind: current.kind },
      given,
      credentials,
    );
    // New provider settings (another client, other scopes) need the account authorized again.
    const reauthorize = oauth && JSON.stringify(config) !== JSON.stringify(current.config);
    if (reauthorize) await revokeConnectionTokens(deps, current);
    const updated = await updateConnection(knex, current.id, {
      config: config as ConnectionRow['config'],
      ...(patch.credentials || reauthorize
        ? {
            credentials_sealed: secrets.seal(
              JSON.stringify(reauthorize ? { ...(credentials as object), tokens: undefined } : credentials),
            ),
          }
        : {}),
      ...(reauthorize
        ? { status: 'pending_authorization', status_detail: 'its settings changed: authorize it again in Integrations' }
        : oauth
          ? {}
          : { status: 'connected', status_detail: null }),
    });
    await auditRequest(knex, req, 'connection.updated', updated.name, {
      changed: [
        ...Object.keys(patch.config ?? {}).map((k) => `config.${k}`),
        ...(patch.credentials ? ['credentials'] : []),
      ],
    });
    res.json(connectionJson(updated));
  });

  r.post('/connections/:id/test', requirePermission('admin'), async (req, res) => {
    const c = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    try {
      const credentials = credentialsOf(c);
      const { found } = await tryConnecting(
        { workspaceId: c.workspace_id, name: c.name, kind: c.kind },
        c.config as Record<string, unknown>,
        credentials,
      );
      // An oauth2 connection is connected only once authorized: a reachable provider does not change that.
      if (c.kind !== 'oauth2' || (c.status === 'failing' && (credentials as { tokens?: unknown }).tokens))
        await updateConnection(knex, c.id, { status: 'connected', status_detail: null });
      res.json({ ok: true, ...found });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      await updateConnection(knex, c.id, { status: 'failing', status_detail: err.message });
      res.json({ ok: false, detail: err.message });
    }
  });

  // What the editor offers for an agent that lists this connection. An MCP server's tools are those it listed when
  // someone who may manage connections last asked: reading them never calls the server with the stored headers.
  // Other kinds' tools are Cadre's own and answered as they are.
  r.get('/connections/:id/tools', requirePermission('read'), async (req, res) => {
    const c = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    if (c.kind !== 'mcp') {
      const tools = await listConnectionTools(c, credentialsOf(c), deps.connectors);
      return void res.json({ data: tools, listed_at: null, next_cursor: null });
    }
    if (c.tools) return void res.json({ data: c.tools, listed_at: c.tools_listed_at, next_cursor: null });
    if (!callerMay(req.auth!, 'manage'))
      throw new ApiError(
        409,
        'tools_not_listed',
        `the tools of connection "${c.name}" have not been listed yet: someone who may manage connections lists them (POST /v1/connections/${c.id}/tools/refresh, or open the connection in Integrations)`,
      );
    res.json(await listToolsNow(c));
  });

  r.post('/connections/:id/tools/refresh', requirePermission('manage'), async (req, res) => {
    res.json(await listToolsNow(await load(knex, req.auth!.workspace.id, param(req, 'id'))));
  });

  r.delete('/connections/:id', requirePermission('admin'), async (req, res) => {
    const c = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    if (c.kind === 'oauth2') await revokeConnectionTokens(deps, c);
    await deleteConnection(knex, c.workspace_id, c.id);
    await auditRequest(knex, req, 'connection.removed', c.name, { kind: c.kind });
    res.status(204).end();
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const connectionRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/connectors',
    id: 'listConnectors',
    summary:
      'The kinds of system connections can be made to (email, cloud storage, team chat, CRM, payments, calendar, warehouse): their settings, tools and events',
    scope: 'read',
    ok: { 200: list(ref('Connector')) },
  },
  {
    method: 'get',
    path: '/mcp-servers',
    id: 'listMcpServers',
    summary:
      'The MCP servers the operator declares (CADRE_MCP_STDIO_SERVERS), which the workers start and speak to over stdio: a connection of transport stdio names one; their commands and environments are not shown',
    scope: 'read',
    ok: { 200: list(ref('McpServer')) },
  },
  {
    method: 'get',
    path: '/connections',
    id: 'listConnections',
    summary: 'Integrations: the connections of the workspace by name, never their credentials (?limit=&cursor=)',
    scope: 'read',
    ok: { 200: list(ref('Connection')) },
  },
  {
    method: 'post',
    path: '/connections',
    id: 'createConnection',
    summary:
      'Connect a system (a PostgreSQL or MySQL/MariaDB database, an MCP server, a REST API from its OpenAPI document, an OAuth 2.0 account): tested before it is saved; credentials sealed. An oauth2 connection is saved pending_authorization with a one-time authorization_url',
    scope: 'admin',
    body: jsonSchema(bodies.createConnection),
    ok: {
      201: {
        allOf: [
          ref('Connection'),
          {
            type: 'object',
            properties: {
              authorization_url: {
                type: 'string',
                description:
                  'oauth2: where a person signs in at the provider and grants access (one use, ten minutes); the provider sends the browser back to /v1/connections/oauth/callback',
              },
            },
          },
        ],
      },
    },
    errors: [409, 422],
  },
  {
    method: 'post',
    path: '/connections/{id}/authorize',
    id: 'authorizeConnection',
    summary: 'OAuth 2.0: a new one-time authorization_url, to authorize the account (again) at the provider',
    scope: 'admin',
    ok: { 200: obj({ authorization_url: { type: 'string' } }) },
    errors: [404, 409, 422],
  },
  {
    method: 'get',
    path: '/connections/{id}',
    id: 'getConnection',
    summary: 'One connection',
    scope: 'read',
    ok: { 200: ref('Connection') },
    errors: [404],
  },
  {
    method: 'get',
    path: '/connections/{id}/document',
    id: 'getConnectionDocument',
    summary:
      "A REST API (openapi) connection's OpenAPI document, as it was fetched or given (connections answer only its summary); 409 not_openapi for other kinds",
    scope: 'read',
    ok: { 200: { type: 'object', description: 'The OpenAPI 3.x document.' } },
    errors: [404, 409],
  },
  {
    method: 'patch',
    path: '/connections/{id}',
    id: 'updateConnection',
    summary: 'Change settings or credentials (tested before they replace the old ones)',
    scope: 'admin',
    body: jsonSchema(bodies.updateConnection),
    ok: { 200: ref('Connection') },
    errors: [404, 422],
  },
  {
    method: 'delete',
    path: '/connections/{id}',
    id: 'deleteConnection',
    summary:
      'Remove a connection (an oauth2 one revokes its tokens at the provider first); runs that use it afterwards fail that step, saying so',
    scope: 'admin',
    ok: { 204: null },
    errors: [404],
  },
  {
    method: 'get',
    path: '/connections/{id}/tools',
    id: 'listConnectionTools',
    summary:
      "The tools agents can call through a connection: an MCP server's as it last listed them (`listed_at`; never asked with a read-only caller's request: 409 tools_not_listed until someone who may manage connections has listed them, which a manager's first read does), or a database's sql.* tools",
    scope: 'read',
    ok: { 200: list(ref('ConnectionTool')) },
    errors: [404, 409, 422],
  },
  {
    method: 'post',
    path: '/connections/{id}/tools/refresh',
    id: 'refreshConnectionTools',
    summary:
      "Ask an MCP server for its tools now, with the connection's stored headers, and keep the list (422 connection_failed with the reason when it cannot be reached)",
    scope: 'manage',
    ok: { 200: list(ref('ConnectionTool')) },
    errors: [404, 422],
  },
  {
    method: 'post',
    path: '/connections/{id}/test',
    id: 'testConnection',
    summary: 'Connect now and report; a failure marks the connection failing',
    scope: 'admin',
    ok: {
      200: obj(
        {
          ok: { type: 'boolean' },
          server_version: { type: 'string' },
          tools: {
            type: 'array',
            items: { type: 'string' },
            description: "an MCP server's tools, or a REST API's operations",
          },
          found: {
            type: 'array',
            items: { type: 'string' },
            description: "what the connection reaches: a warehouse's tables, a mailbox's folders, a bucket's prefixes",
          },
          detail: { type: 'string' },
        },
        ['ok'],
      ),
    },
    errors: [404],
  },
];
