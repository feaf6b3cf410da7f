// Integrations: the workspace's connections. Creating or changing one tests it first, so a connection that is
// listed works; its credentials are sealed at once and never answered, logged or audited.
import { Router } from 'express';
import type { Knex } from 'knex';
import {
  ConnectionNameTakenError,
  createConnection,
  deleteConnection,
  getConnection,
  listConnections,
  updateConnection,
  type ConnectionRow,
} from '../../db/connections';
import type { SecretBox } from '../../db/secret-box';
import { connectionSchemas, type ConnectionKind } from '../../model/connection';
import { checkConnection, connectionAbilities, listConnectionTools } from '../../activities/connectors/check';
import type { McpLimits } from '../../activities/connectors/mcp/client';
import { auditRequest } from '../audit-request';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { bodies } from '../request-bodies';
import { jsonBody, param, parseBody } from '../validation';
import type { RouteDeps } from './agents';

export function connectionJson(c: ConnectionRow) {
  return {
    id: c.id,
    name: c.name,
    kind: c.kind,
    config: c.config,
    status: c.status,
    status_detail: c.status_detail,
    can: connectionAbilities(c.kind, c.config),
    created_by: c.created_by,
    created_at: c.created_at,
    updated_at: c.updated_at,
    last_used_at: c.last_used_at,
  };
}

/** Where a connection of this kind points, for messages. */
const target = (kind: ConnectionKind, config: Record<string, unknown>) =>
  `${kind} at ${String(config.host ?? config.url ?? config.command)}`;

export function connectionRoutes(deps: RouteDeps & { secrets: SecretBox; connectors: McpLimits }): Router {
  const { knex, secrets } = deps;
  const r = Router();
  const body = jsonBody(deps.bodyLimit);
  const load = async (k: Knex, workspaceId: string, id: string) => {
    const c = await getConnection(k, workspaceId, id);
    if (!c) throw new ApiError(404, 'connection_not_found', `no connection ${id} in this workspace`);
    return c;
  };
  const credentialsOf = (c: ConnectionRow) =>
    connectionSchemas[c.kind].credentials.parse(JSON.parse(secrets.open(c.credentials_sealed)));

  /** Connects as a run would; 422 connection_failed with the reason when that fails. */
  const tryConnecting = (kind: ConnectionKind, config: Record<string, unknown>, credentials: unknown) =>
    failingAs(kind, config, () => checkConnection(kind, config, credentials, deps.connectors));

  async function failingAs<T>(kind: ConnectionKind, config: Record<string, unknown>, attempt: () => Promise<T>) {
    try {
      return await attempt();
    } catch (err) {
      const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300);
      throw new ApiError(422, 'connection_failed', `could not connect to ${target(kind, config)}: ${reason}`);
    }
  }

  r.get('/connections', requirePermission('read'), async (req, res) => {
    res.json({ data: (await listConnections(knex, req.auth!.workspace.id)).map(connectionJson), next_cursor: null });
  });

  r.post('/connections', requirePermission('admin'), ...body, async (req, res) => {
    const input = parseBody(bodies.createConnection, req.body);
    await tryConnecting(input.kind, input.config, input.credentials);
    let created: ConnectionRow;
    try {
      created = await createConnection(knex, {
        workspace_id: req.auth!.workspace.id,
        name: input.name,
        kind: input.kind,
        config: input.config,
        credentials_sealed: secrets.seal(JSON.stringify(input.credentials)),
        created_by: req.auth!.actor,
      });
    } catch (err) {
      if (err instanceof ConnectionNameTakenError)
        throw new ApiError(409, 'connection_name_taken', `the workspace already has a connection "${input.name}"`);
      throw err;
    }
    await auditRequest(knex, req, 'connection.created', created.name, { kind: created.kind });
    res.status(201).location(`/v1/connections/${created.id}`).json(connectionJson(created));
  });

  r.get('/connections/:id', requirePermission('read'), async (req, res) => {
    res.json(connectionJson(await load(knex, req.auth!.workspace.id, param(req, 'id'))));
  });

  // New settings or credentials (a rotated password): tested before they replace the old ones.
  r.patch('/connections/:id', requirePermission('admin'), ...body, async (req, res) => {
    const current = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    const patch = parseBody(bodies.updateConnection, req.body);
    const schemas = connectionSchemas[current.kind];
    const config = parseBody(schemas.config, { ...current.config, ...patch.config }) as Record<string, unknown>;
    const credentials = patch.credentials ? parseBody(schemas.credentials, patch.credentials) : credentialsOf(current);
    await tryConnecting(current.kind, config, credentials);
    const updated = await updateConnection(knex, current.id, {
      config: config as ConnectionRow['config'],
      ...(patch.credentials ? { credentials_sealed: secrets.seal(JSON.stringify(credentials)) } : {}),
      status: 'connected',
      status_detail: null,
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
      const found = await tryConnecting(c.kind, c.config as Record<string, unknown>, credentialsOf(c));
      await updateConnection(knex, c.id, { status: 'connected', status_detail: null });
      res.json({ ok: true, ...found });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      await updateConnection(knex, c.id, { status: 'failing', status_detail: err.message });
      res.json({ ok: false, detail: err.message });
    }
  });

  // What the editor offers for an agent that lists this connection: an MCP server is asked for its tools now.
  r.get('/connections/:id/tools', requirePermission('read'), async (req, res) => {
    const c = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    const config = c.config as Record<string, unknown>;
    const tools = await failingAs(c.kind, config, () => listConnectionTools(c, credentialsOf(c), deps.connectors));
    res.json({ data: tools, next_cursor: null });
  });

  r.delete('/connections/:id', requirePermission('admin'), async (req, res) => {
    const c = await load(knex, req.auth!.workspace.id, param(req, 'id'));
    await deleteConnection(knex, c.workspace_id, c.id);
    await auditRequest(knex, req, 'connection.removed', c.name, { kind: c.kind });
    res.status(204).end();
  });

  return r;
}
