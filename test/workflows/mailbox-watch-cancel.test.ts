// The one activity that waits on something outside for minutes, an email.received trigger's IMAP IDLE watch
// (activities/mailbox-watch.ts), honours its cancellation: cancelled while it idles in the folder (its trigger
// removed, its agent paused), it ends at once with the cancellation rather than at the end of its five-minute wait.
// Run in Temporal's MockActivityEnvironment against Debian's Dovecot and the test stack's Postgres.
import assert from 'node:assert/strict';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities';
import { scheduleIdOf } from '../../schedules/sync';
import { waitFor } from '../../scripts/supervisor';
import { connectorApi } from '../support/connections';
import { startDovecot, type Dovecot } from '../support/dovecot';
import { startSmtpSubmission, type SmtpSubmission } from '../support/smtp-submission';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';

describe('activities: a mailbox watch is cancelled (MockActivityEnvironment)', function () {
  const mailbox = { user: 'watch@example.test', password: 'mailbox-secret-5' };
  const smtpPassword = 'smtp-secret-5';
  let dovecot: Dovecot;
  let smtp: SmtpSubmission;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let trigger: { id: string; agent_id: string };

  before(async () => {
    [dovecot, smtp] = await Promise.all([
      startDovecot([mailbox]),
      startSmtpSubmission({ user: mailbox.user, password: smtpPassword }),
    ]);
    // No worker: the trigger's own watch workflow and polls stay queued; this test runs the activity itself.
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never, worker: false });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    const c = connectorApi(h, api.url, t.key, t.workspace.id);
    await c.connect(
      'desk',
      'email',
      {
        imap: { host: dovecot.host, port: dovecot.port, secure: false, user: mailbox.user },
        smtp: { host: smtp.host, port: smtp.port, secure: false },
        from: mailbox.user,
      },
      { password: mailbox.password, smtp_password: smtpPassword },
    );
    const agent = await createLiveAgent(h, t.workspace.id, {
      name: 'watched desk',
      nodes: [{ kind: 'input', id: 'in', format: 'json' }],
    });
    const made = await c.call('POST', `/agents/${agent.id}/triggers`, {
      kind: 'event',
      connection: 'desk',
      event: 'email.received',
      poll_interval_seconds: 3600,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    trigger = { id: made.body.id, agent_id: agent.id };
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await Promise.all([dovecot?.stop(), smtp?.close()]);
  });

  it('ends with the cancellation while it idles in the folder', async () => {
    const { watchMailbox } = createActivities({ knex: h.stack.knex, config: h.config, temporal: h.client });
    const env = new MockActivityEnvironment({ activityType: 'watchMailbox' });
    const watching = env.run(watchMailbox, { triggerId: trigger.id });
    watching.catch(() => undefined); // awaited below

    // Once IDLE has begun, the watch fires the trigger's first poll through its schedule.
    const schedule = h.client.schedule.getHandle(scheduleIdOf(trigger));
    await waitFor(
      'the watch idling',
      async () => assert.ok((await schedule.describe()).info.recentActions.length > 0),
      60_000,
    );
    env.cancel();
    await assert.rejects(watching, (err: unknown) => err instanceof CancelledFailure);
  });
});
