// The IDLE side of an email.received trigger (workflows/mailbox-watch.ts): waits in the watched folder until mail
// arrives, then fires the trigger's poll through its Temporal Schedule, the same poll an interval fires. The poll
// does the reading and the exactly-once bookkeeping; this only makes it come sooner.
import { Context } from '@temporalio/activity';
import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import { findTrigger } from '../db/triggers';
import { eventConfigSchema } from '../model/trigger';
import { scheduleIdOf } from '../schedules/sync';
import { waitForMail, type MailboxWait } from './connectors/email/idle';
import type { EmailConnection } from './connectors/email/imap';
import { connectionOpener } from './connectors/opened';
import type { ActivityDeps } from './deps';

/** One IDLE lasts this long at most; then the workflow starts the next (servers drop an IDLE after 30 minutes). */
export const idleWaitMs = 5 * 60_000;

export type MailboxWatch = MailboxWait | { outcome: 'stopped'; reason: string };

export function createMailboxWatchActivities(deps: ActivityDeps) {
  const { knex } = deps;
  return {
    async watchMailbox({ triggerId, uidNext }: { triggerId: string; uidNext?: number }): Promise<MailboxWatch> {
      const trigger = await findTrigger(knex, triggerId);
      if (!trigger || trigger.kind !== 'event') return { outcome: 'stopped', reason: 'the trigger was removed' };
      const config = eventConfigSchema.parse(trigger.config);
      if (config.event !== 'email.received')
        return { outcome: 'stopped', reason: 'the trigger waits for another event' };
      const agent = await knex('agents').where({ id: trigger.agent_id }).first('state');
      if (agent?.state !== 'live') return { outcome: 'stopped', reason: `the agent is ${agent?.state ?? 'gone'}` };
      const temporal = deps.temporal;
      if (!temporal) throw new Error('watching a mailbox needs the worker to have a Temporal client');

      // Buffered behind a poll under way rather than skipped: that poll may have read the folder before this mail.
      // A schedule gone meanwhile is a trigger removed, whose watch is being ended.
      const poll = () =>
        temporal.schedule
          .getHandle(scheduleIdOf(trigger))
          .trigger(ScheduleOverlapPolicy.BUFFER_ONE)
          .catch((err) => {
            if (!(err instanceof ScheduleNotFoundError)) throw err;
          });
      const mailbox = (await connectionOpener(deps, {
        workspaceId: trigger.workspace_id,
        connections: [config.connection],
      })('email', config.connection)) as EmailConnection;
      const waited = await waitForMail(mailbox, mailbox.config.folder, {
        uidNext,
        maxMs: idleWaitMs,
        signal: Context.current().cancellationSignal,
        // A trigger not polled yet has no cursor: its first poll marks where "new" begins, now rather than at the
        // first interval, and after IDLE has begun, so nothing arrives unseen in between. A watch just started (the
        // agent resumed: its cursor marks the resume) polls once too, for what came before its IDLE began.
        whenIdling: async () => {
          const cursor = await knex('trigger_cursors').where({ trigger_id: trigger.id }).first('cursor');
          if (!cursor?.cursor || uidNext === undefined) await poll();
        },
      });
      if (waited.outcome === 'arrived') await poll();
      return waited;
    },
  };
}
