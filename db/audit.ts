// The audit log: security and configuration events (who, what, when, from which address). Recorded on every
// plan; readable on paid plans (spec §8). Entries name secrets by their name or id, never by their value.
import type { Knex } from 'knex';
import { decodeNumberCursor, encodeCursor } from './runs';

export interface AuditEvent {
  workspace_id?: string | null;
  user_id?: string | null;
  actor: string;
  action: string;
  target?: string | null;
  details?: Record<string, unknown>;
  ip?: string | null;
}

export async function recordAudit(knex: Knex | Knex.Transaction, event: AuditEvent): Promise<void> {
  await knex('audit_events').insert({ ...event, details: JSON.stringify(event.details ?? {}) });
}

/**
 * An event of a person's own account (sign-in, password, two-factor): one entry in each workspace they are a
 * member of, so every workspace's admins see it in their log; without a workspace when they belong to none.
 */
export async function recordAccountAudit(
  knex: Knex | Knex.Transaction,
  event: Omit<AuditEvent, 'workspace_id'> & { user_id: string },
): Promise<void> {
  const workspaces = await knex('memberships')
    .join('workspaces', 'workspaces.id', 'memberships.workspace_id')
    .where('memberships.user_id', event.user_id)
    .whereNull('workspaces.deleted_at')
    .pluck('workspaces.id');
  const ids: (string | null)[] = workspaces.length ? workspaces : [null];
  const details = JSON.stringify(event.details ?? {});
  await knex('audit_events').insert(ids.map((workspace_id) => ({ ...event, workspace_id, details })));
}

export async function listAudit(
  knex: Knex,
  workspaceId: string,
  page: { limit: number; cursor?: string; action?: string },
): Promise<{ data: Record<string, unknown>[]; next_cursor: string | null }> {
  const q = knex('audit_events').where({ workspace_id: workspaceId });
  if (page.action) q.where('action', 'like', `${page.action.replace(/[%_\\]/g, '\\$&')}%`);
  if (page.cursor) q.where('id', '<', decodeNumberCursor(page.cursor));
  const rows = await q
    .orderBy('id', 'desc')
    .limit(page.limit + 1)
    .select('id', 'at', 'actor', 'action', 'target', 'details', 'ip');
  const data = rows.slice(0, page.limit).map((r) => ({ ...r, id: Number(r.id) }));
  return { data, next_cursor: rows.length > page.limit ? encodeCursor(data[data.length - 1].id) : null };
}
