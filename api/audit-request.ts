// One audit entry for what the caller of this request just did: who (their email or API key), from where.
import type { Request } from 'express';
import type { Knex } from 'knex';
import { recordAudit } from '../db/audit';

export function auditRequest(
  knex: Knex,
  req: Request,
  action: string,
  target: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  return recordAudit(knex, {
    workspace_id: req.auth!.workspace.id,
    user_id: req.auth!.user?.id ?? null,
    actor: req.auth!.actor,
    action,
    target,
    details,
    ip: req.ip,
  });
}
