// Connections of a workspace (db/migrations/016_connections.ts; 018: OAuth 2.0 authorizations under way). Credentials
// go in sealed and come out sealed: only the worker, about to connect, opens them (activities/connectors/).
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ConnectionConfig, ConnectionKind, ConnectionStatus } from '../model/connection';
import { cursorPage, decodeTextCursor, isUuid } from './runs';

export interface ConnectionRow {
  id: string;
  workspace_id: string;
  name: string;
  kind: ConnectionKind;
  config: ConnectionConfig;
  credentials_sealed: string;
  status: ConnectionStatus;
  status_detail: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  last_used_at: Date | null;
  /** An MCP connection's tools as its server last listed them (null until someone who may manage lists them). */
  tools: Record<string, unknown>[] | null;
  tools_listed_at: Date | null;
}

export class ConnectionNameTakenError extends Error {}

export async function createConnection(
  knex: Knex,
  c: Pick<ConnectionRow, 'workspace_id' | 'name' | 'kind' | 'config' | 'credentials_sealed' | 'created_by'> &
    Partial<Pick<ConnectionRow, 'status' | 'status_detail'>>,
): Promise<ConnectionRow> {
  try {
    const [row] = await knex('connections')
      .insert({ id: randomUUID(), status: 'connected', ...c, config: JSON.stringify(c.config) })
      .returning('*');
    return row;
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw new ConnectionNameTakenError(c.name);
    throw err;
  }
}

/** A page of the workspace's connections by name; the cursor is the last one's name and id. */
export async function listConnections(knex: Knex, workspaceId: string, page: { limit: number; cursor?: string }) {
  const q = knex('connections').where({ workspace_id: workspaceId });
  if (page.cursor) q.whereRaw('(name, id) > (?, ?::uuid)', decodeTextCursor(page.cursor));
  const rows: ConnectionRow[] = await q.orderBy([{ column: 'name' }, { column: 'id' }]).limit(page.limit + 1);
  return cursorPage(rows, page.limit, (c) => [c.name, c.id]);
}

export async function getConnection(knex: Knex, workspaceId: string, id: string): Promise<ConnectionRow | undefined> {
  if (!isUuid(id)) return undefined;
  return knex('connections').where({ workspace_id: workspaceId, id }).first();
}

export function connectionByName(knex: Knex, workspaceId: string, name: string): Promise<ConnectionRow | undefined> {
  return knex('connections').where({ workspace_id: workspaceId, name }).first();
}

export async function updateConnection(
  knex: Knex,
  id: string,
  patch: Partial<Pick<ConnectionRow, 'config' | 'credentials_sealed' | 'status' | 'status_detail'>>,
): Promise<ConnectionRow> {
  const [row] = await knex('connections')
    .where({ id })
    .update({
      ...patch,
      // New settings may reach another server: its tools are listed afresh.
      ...(patch.config ? { config: JSON.stringify(patch.config), tools: null, tools_listed_at: null } : {}),
      updated_at: knex.fn.now(),
    })
    .returning('*');
  return row;
}

export async function deleteConnection(knex: Knex, workspaceId: string, id: string): Promise<boolean> {
  return (await knex('connections').where({ workspace_id: workspaceId, id }).delete()) > 0;
}

export async function markConnectionUsed(knex: Knex, id: string): Promise<void> {
  await knex('connections').where({ id }).update({ last_used_at: knex.fn.now() });
}

/** The names among `names` that are not connected in the workspace (missing, revoked, needing reauthorization). */
export async function unusableConnections(knex: Knex, workspaceId: string, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const rows: { name: string; status: string }[] = await knex('connections')
    .where({ workspace_id: workspaceId })
    .whereIn('name', names)
    .select('name', 'status');
  const usable = new Set(rows.filter((r) => r.status === 'connected' || r.status === 'failing').map((r) => r.name));
  return names.filter((n) => !usable.has(n));
}

/** An OAuth 2.0 authorization started for a connection: the hashed state and sealed PKCE verifier, for ten minutes. */
export interface ConnectionAuthorization {
  state_hash: string;
  connection_id: string;
  code_verifier: string;
  started_by: string;
  expires_at: Date;
}

export async function startConnectionAuthorization(
  knex: Knex,
  a: Omit<ConnectionAuthorization, 'expires_at'>,
  ttlMs = 10 * 60_000,
): Promise<void> {
  await knex('connection_authorizations').where('expires_at', '<', knex.fn.now()).delete();
  await knex('connection_authorizations').insert({ ...a, expires_at: new Date(Date.now() + ttlMs) });
}

/** The unexpired authorization with this state hash, taken (deleted) so it is used once. */
export async function takeConnectionAuthorization(
  knex: Knex,
  stateHash: string,
): Promise<ConnectionAuthorization | undefined> {
  const [row] = await knex('connection_authorizations').where({ state_hash: stateHash }).delete().returning('*');
  return row && new Date(row.expires_at).getTime() > Date.now() ? row : undefined;
}

/** Keeps the tools a connection's server listed just now. */
export async function storeConnectionTools(knex: Knex, id: string, tools: Record<string, unknown>[]): Promise<Date> {
  const [row] = await knex('connections')
    .where({ id })
    .update({ tools: JSON.stringify(tools), tools_listed_at: knex.fn.now() })
    .returning('tools_listed_at');
  return row.tools_listed_at;
}
