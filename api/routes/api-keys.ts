// API keys of the caller's workspace: listed without secrets, created and rotated with the key shown once,
// revoked at once.
import { Router } from 'express';
import { jsonSchema, list, ref, type Route } from '../openapi-schemas';
import { bodies } from '../request-bodies';
import { createApiKey, listApiKeys, listApiKeysPage, revokeApiKey, type ApiKeyRecord } from '../../db/api-keys';
import { auditRequest } from '../audit-request';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { jsonBody, param, parseBody } from '../validation';
import { parseQuery, queries } from '../query-params';
import type { RouteDeps } from './agents';

const keyJson = ({ workspace_id: _ws, ...key }: ApiKeyRecord) => key;

export function apiKeyRoutes(deps: RouteDeps): Router {
  const { knex } = deps;
  const r = Router();

  r.get('/api-keys', requirePermission('admin'), async (req, res) => {
    const page = await listApiKeysPage(knex, req.auth!.workspace.id, parseQuery(queries.listApiKeys, req.query));
    res.json({ data: page.data.map(keyJson), next_cursor: page.next_cursor });
  });

  r.post('/api-keys', requirePermission('admin'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    const { name, scopes: keyScopes, expires_at } = parseBody(bodies.createApiKey, req.body);
    const expiresAt = expires_at ? new Date(expires_at) : null;
    const { key, record } = await createApiKey(knex, req.auth!.workspace.id, name, keyScopes, expiresAt);
    await auditRequest(knex, req, 'api_key.created', record.name, { id: record.id, scopes: record.scopes });
    res.status(201).json({ ...keyJson(record), key });
  });

  // A new secret with the same name and scopes; the old one stops working at once.
  r.post('/api-keys/:id/rotate', requirePermission('admin'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const old = (await listApiKeys(knex, ws)).find((k) => k.id === param(req, 'id') && !k.revoked_at);
    if (!old) throw new ApiError(404, 'api_key_not_found', `no active API key ${param(req, 'id')} in this workspace`);
    const { key, record } = await knex.transaction(async (trx) => {
      await revokeApiKey(trx, ws, old.id);
      return createApiKey(trx, ws, old.name, old.scopes, old.expires_at);
    });
    await auditRequest(knex, req, 'api_key.rotated', record.name, { id: record.id, replaces: old.id });
    res.status(201).json({ ...keyJson(record), key, replaces: old.id });
  });

  r.delete('/api-keys/:id', requirePermission('admin'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    if (!(await revokeApiKey(knex, ws, param(req, 'id')))) {
      throw new ApiError(404, 'api_key_not_found', `no active API key ${param(req, 'id')} in this workspace`);
    }
    // Named as when it was created, so the audit log reads "revoked CI pipeline", not an id.
    const revoked = (await listApiKeys(knex, ws)).find((k) => k.id === param(req, 'id'));
    await auditRequest(knex, req, 'api_key.revoked', revoked?.name ?? param(req, 'id'), { id: param(req, 'id') });
    res.status(204).end();
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const apiKeyRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/api-keys',
    id: 'listApiKeys',
    summary: 'API keys of the workspace, oldest first, never their secrets (?limit=&cursor=)',
    scope: 'admin',
    ok: { 200: list(ref('ApiKey')) },
  },
  {
    method: 'post',
    path: '/api-keys',
    id: 'createApiKey',
    summary: 'A new key (shown once)',
    scope: 'admin',
    body: jsonSchema(bodies.createApiKey),
    ok: { 201: ref('ApiKey') },
    errors: [422],
  },
  {
    method: 'post',
    path: '/api-keys/{id}/rotate',
    id: 'rotateApiKey',
    summary: 'Replace a key (the old one stops at once)',
    scope: 'admin',
    ok: { 201: ref('ApiKey') },
  },
  {
    method: 'delete',
    path: '/api-keys/{id}',
    id: 'revokeApiKey',
    summary: 'Revoke a key',
    scope: 'admin',
    ok: { 204: null },
  },
];
