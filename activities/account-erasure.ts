// The end of an account's recovery period: its rows go, and so do the Temporal schedules of its workspaces.
import { deleteSchedule } from '../schedules/sync';
import { eraseAccount } from '../db/account-deletion';
import type { ActivityDeps } from './deps';

export function createAccountErasureActivities({ knex, temporal }: ActivityDeps) {
  return {
    async eraseDeletedAccount({ userId }: { userId: string }): Promise<'erased' | 'recovered'> {
      // Schedules first: a fire between the two steps finds no trigger and records nothing.
      const schedules = await knex('triggers')
        .whereIn('workspace_id', knex('memberships').where({ user_id: userId, role: 'owner' }).select('workspace_id'))
        .whereIn('workspace_id', knex('workspaces').whereNotNull('deleted_at').select('id'))
        .whereIn('kind', ['schedule', 'event'])
        .select('id', 'agent_id', 'kind');
      if (temporal) for (const t of schedules) await deleteSchedule({ temporal }, t);
      return (await eraseAccount(knex, userId)) === null ? 'recovered' : 'erased';
    },
  };
}
