// Invitations to a workspace: a one-time link valid for a week, optionally bound to one address. Only the
// token's hash is stored; the link is shown (or emailed) once.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Role } from './roles';
import { newToken } from './tokens';
import { normalizeEmail } from './accounts';

export const invitationDays = 7;
export const invitationColumns = ['id', 'role', 'email', 'created_at', 'expires_at', 'accepted_at', 'revoked_at'];

export async function createInvitation(
  knex: Knex,
  input: { workspaceId: string; role: Role; email?: string; createdBy?: string | null; publicUrl: string },
): Promise<{ invitation: Record<string, unknown> & { id: string }; url: string }> {
  const { token, hash } = newToken();
  const [invitation] = await knex('invitations')
    .insert({
      id: randomUUID(),
      workspace_id: input.workspaceId,
      role: input.role,
      email: input.email ? normalizeEmail(input.email) : null, // compared with accounts' lower-cased addresses
      token_hash: hash,
      created_by: input.createdBy ?? null,
      expires_at: new Date(Date.now() + invitationDays * 86_400_000),
    })
    .returning(invitationColumns);
  return { invitation, url: `${input.publicUrl}/invite/${token}` };
}

/** Withdraws an open invitation of the workspace; false when there is none by that id. */
export async function revokeInvitation(knex: Knex, workspaceId: string, id: string): Promise<boolean> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
  const n = await knex('invitations')
    .where({ id, workspace_id: workspaceId })
    .whereNull('accepted_at')
    .whereNull('revoked_at')
    .update({ revoked_at: knex.fn.now() });
  return n > 0;
}
