// API keys: shown once, stored as a lookup prefix plus a SHA-256 hash of the secret. The secret carries 192
// bits of randomness, so a fast hash is safe here (a slow password hash is for guessable secrets).
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import type { Workspace } from './workspaces';
import { decodeTimeCursor, timeCursorPage } from './runs';

export const scopes = ['run', 'read', 'manage'] as const;
export type Scope = (typeof scopes)[number];

export interface ApiKeyRecord {
  id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  /** When it stops working on its own; null: until revoked. */
  expires_at: Date | null;
}

const keyColumns = [
  'id',
  'workspace_id',
  'name',
  'prefix',
  'scopes',
  'created_at',
  'last_used_at',
  'revoked_at',
  'expires_at',
];
const keyPattern = /^cadre_([a-z0-9]{12})_([A-Za-z0-9_-]{32})$/;
const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

export async function createApiKey(
  knex: Knex,
  workspaceId: string,
  name: string,
  keyScopes: Scope[],
  expiresAt: Date | null = null,
): Promise<{ key: string; record: ApiKeyRecord }> {
  const prefix = randomBytes(9)
    .toString('base64url')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '0')
    .slice(0, 12);
  const secret = randomBytes(24).toString('base64url');
  const [record] = await knex('api_keys')
    .insert({
      id: randomUUID(),
      workspace_id: workspaceId,
      name,
      prefix,
      hash: hashOf(secret),
      scopes: keyScopes,
      expires_at: expiresAt,
    })
    .returning(keyColumns);
  return { key: `cadre_${prefix}_${secret}`, record };
}

export type KeyCheck =
  | { ok: true; key: ApiKeyRecord; workspace: Workspace }
  | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' | 'expired' };

export async function verifyApiKey(knex: Knex, presented: string): Promise<KeyCheck> {
  const m = keyPattern.exec(presented);
  if (!m) return { ok: false, reason: 'malformed' };
  // The key and its workspace in one round trip: this runs on every request.
  const row = await knex('api_keys')
    .join('workspaces', 'workspaces.id', 'api_keys.workspace_id')
    .where({ prefix: m[1] })
    .whereNull('workspaces.deleted_at') // a deleted workspace's keys open nothing
    .first(
      'api_keys.*',
      knex.raw(
        "json_build_object('id', workspaces.id, 'name', workspaces.name, 'plan', workspaces.plan, 'api_enabled', workspaces.api_enabled, 'created_at', workspaces.created_at) as workspace",
      ),
    );
  if (!row) return { ok: false, reason: 'unknown' };
  const a = Buffer.from(row.hash, 'hex');
  const b = Buffer.from(hashOf(m[2]), 'hex');
  if (a.length !== b.length || !timingSafeEqual(a, b)) return { ok: false, reason: 'unknown' };
  if (row.revoked_at) return { ok: false, reason: 'revoked' };
  if (row.expires_at && new Date(row.expires_at) <= new Date()) return { ok: false, reason: 'expired' };
  const { hash: _hash, workspace, ...key } = row;
  return { ok: true, key, workspace: { ...workspace, created_at: new Date(workspace.created_at) } };
}

const lastTouched = new Map<string, number>();

/** Records use at most once a minute per key, so busy keys do not turn every request into a write. */
export async function touchApiKey(knex: Knex, id: string): Promise<void> {
  const now = Date.now();
  if (now - (lastTouched.get(id) ?? 0) < 60_000) return;
  lastTouched.set(id, now);
  await knex('api_keys')
    .where({ id })
    .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', knex.raw(`now() - interval '1 minute'`)))
    .update({ last_used_at: knex.fn.now() });
}

export async function revokeApiKey(knex: Knex, workspaceId: string, id: string): Promise<boolean> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
  return (
    (await knex('api_keys')
      .where({ id, workspace_id: workspaceId })
      .whereNull('revoked_at')
      .update({ revoked_at: knex.fn.now() })) > 0
  );
}

export function listApiKeys(knex: Knex, workspaceId: string): Promise<ApiKeyRecord[]> {
  return knex('api_keys').where({ workspace_id: workspaceId }).orderBy('created_at').select(keyColumns);
}

/** A page of the workspace's keys, oldest first; the cursor is the last one's (created_at, id). */
export async function listApiKeysPage(
  knex: Knex,
  workspaceId: string,
  page: { limit: number; cursor?: string },
): Promise<{ data: ApiKeyRecord[]; next_cursor: string | null }> {
  const q = knex('api_keys')
    .where({ workspace_id: workspaceId })
    .select(...keyColumns, knex.raw('created_at::text as cursor_at'));
  if (page.cursor) q.whereRaw('(created_at, id) > (?::timestamptz, ?::uuid)', decodeTimeCursor(page.cursor));
  const rows: (ApiKeyRecord & { cursor_at: string })[] = await q
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .limit(page.limit + 1);
  return timeCursorPage(rows, page.limit);
}
