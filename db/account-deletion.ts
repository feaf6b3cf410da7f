// Deleting an account: at once the account, and every workspace it alone owns, become inaccessible (sessions
// end, keys stop working, public links and schedules find nothing); for the recovery period everything can be
// restored; then erasure removes every row of them. Shared workspaces keep their history, with the person's
// address replaced.
import type { Knex } from 'knex';

export const deletedLabel = 'a deleted account';

/** The Temporal workflow that erases the account when its recovery period ends. */
export const accountErasureId = (userId: string) => `account-erasure-${userId}`;

/** Workspaces where this account is the only owner: they go with it. */
function solelyOwned(knex: Knex | Knex.Transaction, userId: string) {
  return knex('memberships as m')
    .where({ 'm.user_id': userId, 'm.role': 'owner' })
    .whereNotExists(
      knex('memberships as o')
        .whereRaw('o.workspace_id = m.workspace_id')
        .where('o.role', 'owner')
        .whereNot('o.user_id', userId),
    )
    .select('m.workspace_id');
}

export async function markAccountDeleted(knex: Knex, userId: string, eraseAt: Date): Promise<string[]> {
  return knex.transaction(async (trx) => {
    const workspaces = (await solelyOwned(trx, userId)).map((r) => r.workspace_id as string);
    await trx('users').where({ id: userId }).update({ deleted_at: trx.fn.now(), erase_at: eraseAt });
    if (workspaces.length) await trx('workspaces').whereIn('id', workspaces).update({ deleted_at: trx.fn.now() });
    await trx('sessions').where({ user_id: userId }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
    return workspaces;
  });
}

/** False when there was nothing left to restore (erased meanwhile). */
export async function restoreAccount(knex: Knex, userId: string): Promise<boolean> {
  return knex.transaction(async (trx) => {
    const restored = await trx('users')
      .where({ id: userId })
      .whereNotNull('deleted_at')
      .update({ deleted_at: null, erase_at: null });
    if (restored === 0) return false;
    await trx('workspaces')
      .whereIn('id', trx('memberships').where({ user_id: userId, role: 'owner' }).select('workspace_id'))
      .whereNotNull('deleted_at')
      .update({ deleted_at: null });
    return true;
  });
}

/**
 * Erases a deleted account for good: its own workspaces with everything in them (the foreign keys cascade from
 * the workspace to agents, runs, items, files, sources, keys, audit entries…), the account with its sessions and
 * memberships, and its address wherever shared workspaces recorded it. Returns the erased workspace ids (for
 * their Temporal schedules), or null when the account was recovered meanwhile.
 */
export async function eraseAccount(knex: Knex, userId: string): Promise<string[] | null> {
  return knex.transaction(async (trx) => {
    const user = await trx('users').where({ id: userId }).whereNotNull('deleted_at').forUpdate().first('email');
    if (!user) return null;
    const workspaces = (
      await trx('workspaces')
        .whereIn('id', trx('memberships').where({ user_id: userId, role: 'owner' }).select('workspace_id'))
        .whereNotNull('deleted_at')
        .select('id')
    ).map((r) => r.id as string);
    if (workspaces.length) await trx('workspaces').whereIn('id', workspaces).delete();
    await trx('audit_events').where({ actor: user.email }).update({ actor: deletedLabel });
    await trx('approvals').where({ decided_by: user.email }).update({ decided_by: deletedLabel });
    await trx('item_reviews').where({ decided_by: user.email }).update({ decided_by: deletedLabel });
    await trx('agent_versions').where({ saved_by: user.email }).update({ saved_by: deletedLabel });
    // What the person made in workspaces that stay (shared ones) keeps its history, without their address.
    for (const table of ['source_versions', 'connections', 'skills', 'skill_versions', 'wizard_sessions'])
      await trx(table).where({ created_by: user.email }).update({ created_by: deletedLabel });
    await trx('agent_events')
      .where('message', 'like', `%${user.email}%`)
      .update({ message: trx.raw('replace(message, ?, ?)', [user.email, deletedLabel]) });
    await trx('users').where({ id: userId }).delete();
    return workspaces;
  });
}
