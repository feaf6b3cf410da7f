// Event triggers on a connected mailbox, against Debian's Dovecot: mail starts its run the moment it arrives, through
// the trigger's IMAP IDLE watch (the trigger's interval is an hour, so nothing else could have started it), with its
// text and attachment types for the trigger's conditions; pausing ends the watch and resuming starts it again; and a
// trigger that keeps its mail in the Inbox gets threads that email.reply answers from the mailbox, over its SMTP
// server, in the same thread.
import assert from 'node:assert/strict';
import type { ImapFlow } from 'imapflow';
import MailComposer from 'nodemailer/lib/mail-composer';
import type Mail from 'nodemailer/lib/mailer';
import { simpleParser } from 'mailparser';
import { mailboxWatchWorkflowId } from '../../../schedules/sync';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';
import { startDovecot, type Dovecot } from '../../support/dovecot';
import { startSmtpSubmission, type SmtpSubmission } from '../../support/smtp-submission';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startApi,
  waitForRun,
  type Harness,
} from '../../support/harness';

const pdf = Buffer.from('%PDF-1.4\n% an invoice\n%%EOF\n');

/** Checks `probe` until it answers something, for at most a minute. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const found = await probe();
    if (found) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not happen`);
}

describe('event triggers: email received (IMAP IDLE, conditions, the Inbox)', function () {
  this.timeout(300_000);
  const mailbox = { user: 'desk@example.test', password: 'mailbox-secret-9' };
  const smtpPassword = 'smtp-secret-3c1';
  let dovecot: Dovecot;
  let imap: ImapFlow;
  let smtp: SmtpSubmission;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let ws = '';

  before(async () => {
    [dovecot, smtp] = await Promise.all([
      startDovecot([mailbox]),
      startSmtpSubmission({ user: mailbox.user, password: smtpPassword }),
    ]);
    imap = await dovecot.as(mailbox);
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    ws = t.workspace.id;
    c = connectorApi(h, api.url, t.key, ws);
    await c.connect(
      'desk',
      'email',
      {
        imap: { host: dovecot.host, port: dovecot.port, secure: false, user: mailbox.user },
        smtp: { host: smtp.host, port: smtp.port, secure: false },
        from: `Help Desk <${mailbox.user}>`,
      },
      { password: mailbox.password, smtp_password: smtpPassword },
    );
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await Promise.all([dovecot?.stop(), smtp?.close()]);
  });

  const deliver = async (mail: Mail.Options) =>
    imap.append('INBOX', await new MailComposer({ to: mailbox.user, ...mail }).compile().build());

  async function emailTrigger(agentId: string, extra: Json = {}) {
    const made = await c.call('POST', `/agents/${agentId}/triggers`, {
      kind: 'event',
      connection: 'desk',
      event: 'email.received',
      poll_interval_seconds: 3600, // an hour: only the IDLE watch can start a run within this test
      ...extra,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return made.body as Json;
  }
  /** The trigger's first poll, fired by its watch once IDLE has begun, has marked where "new" mail begins. */
  const watching = (trigger: Json) =>
    eventually('the first poll', async () => {
      const row = await h.stack.knex('trigger_cursors').where({ trigger_id: trigger.id }).first('cursor');
      return row?.cursor ? true : undefined;
    });
  const runsOf = (agentId: string) =>
    h.stack.knex('runs').where({ agent_id: agentId, trigger: 'event' }).orderBy('created_at');
  const watchStatus = async (trigger: Json) =>
    (await h.client.workflow.getHandle(mailboxWatchWorkflowId(trigger.id)).describe()).status.name;

  const counter = (name: string) => ({
    name,
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'count' },
      { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'mails' } },
    ],
  });

  it('starts a run the moment mail arrives, with its text and attachment types for the conditions', async () => {
    const agent = await createLiveAgent(h, ws, counter('PDF invoices'));
    const trigger = await emailTrigger(agent.id, {
      filter: {
        all: [
          { field: 'attachment_types', op: 'contains', value: 'application/pdf' },
          { field: 'text', op: 'contains', value: 'invoice' },
        ],
      },
    });
    await watching(trigger);
    assert.equal(await watchStatus(trigger), 'RUNNING');

    await deliver({
      from: 'Acme Billing <billing@acme.test>',
      subject: 'March',
      html: '<p>Please find our <b>invoice</b> 77 attached.</p>',
      messageId: '<march-77@acme.test>',
      attachments: [{ filename: 'invoice-77.pdf', content: pdf, contentType: 'application/pdf' }],
    });
    const [run] = await eventually('the run of the mail', async () => {
      const runs = await runsOf(agent.id);
      return runs.length > 0 ? runs : undefined;
    });
    assert.equal((await waitForRun(h, run.id)).status, 'completed');
    const [item] = await items(h, run.id);
    const data = item.data as Json;
    assert.equal(data.subject, 'March');
    assert.equal(data.message_id, '<march-77@acme.test>');
    assert.match(data.text, /Please find our invoice 77 attached\./, 'an HTML-only message as text');
    assert.deepEqual(data.attachment_types, ['application/pdf']);
    assert.deepEqual(
      data.files.map((f: Json) => [f.name, f.content_type]),
      [['invoice-77.pdf', 'application/pdf']],
    );

    // Mail the conditions turn away is told on the timeline and starts nothing.
    await deliver({ from: 'billing@acme.test', subject: 'Newsletter', text: 'An invoice, but no PDF here.' });
    await deliver({
      from: 'billing@acme.test',
      subject: 'Photos',
      text: 'Holiday pictures',
      attachments: [{ filename: 'beach.pdf', content: pdf, contentType: 'application/pdf' }],
    });
    const skipped = await eventually('the filtered mail to be told', async () => {
      const rows = await h.stack
        .knex('agent_events')
        .where({ agent_id: agent.id, kind: 'trigger_skipped' })
        .select('message');
      return rows.length >= 2 ? rows : undefined;
    });
    assert.ok(skipped.every((e) => /filtered out by the trigger's conditions/.test(e.message)));
    assert.equal((await runsOf(agent.id)).length, 1);
  });

  it('pausing the agent ends the watch; resuming starts it again, from the mail that comes next', async () => {
    const agent = await createLiveAgent(h, ws, counter('Paused desk'));
    const trigger = await emailTrigger(agent.id);
    await watching(trigger);
    const setState = async (state: string) =>
      assert.equal((await c.call('POST', `/agents/${agent.id}/state`, { state })).status, 200);

    await setState('paused');
    assert.equal(await watchStatus(trigger), 'TERMINATED');
    await deliver({ from: 'someone@example.test', subject: 'While paused', text: 'sent while the agent was paused' });

    await setState('live');
    assert.equal(await watchStatus(trigger), 'RUNNING');
    await watching(trigger); // resumed without the missed mail: the cursor starts again from now
    await deliver({ from: 'someone@example.test', subject: 'After resuming', text: 'sent once it was live again' });
    const runs = await eventually('the run of the mail after resuming', async () => {
      const found = await runsOf(agent.id);
      return found.length > 0 ? found : undefined;
    });
    assert.equal((await waitForRun(h, runs[0].id)).status, 'completed');
    const [item] = await items(h, runs[0].id);
    assert.equal((item.data as Json).subject, 'After resuming');
    assert.equal(runs.length, 1, 'the mail of the pause is not delivered (skip_missed)');

    const removed = await c.call('DELETE', `/triggers/${trigger.id}`);
    assert.equal(removed.status, 204);
    assert.equal(await watchStatus(trigger), 'TERMINATED');
  });

  it('keeps mail in the Inbox, where the approved reply goes out from the mailbox in the same thread', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'Mailbox help desk',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'reply' },
        {
          kind: 'tool',
          id: 'reply',
          tool: 'email.reply',
          arguments: { thread_id: '{{thread_id}}', text: 'Thanks, we are on "{{subject}}"' },
        },
      ],
    });
    const trigger = await emailTrigger(agent.id, { options: { inbox: true } });
    await watching(trigger);

    await deliver({
      from: 'Carla Customer <carla@example.com>',
      subject: 'Order 42 never arrived',
      text: 'Hello, my order 42 has not arrived yet.',
      messageId: '<order-42@example.com>',
    });
    const [run] = await eventually('the run of the request', async () => {
      const runs = await runsOf(agent.id);
      return runs.length > 0 ? runs : undefined;
    });
    const [item] = JSON.parse(run.input);
    const threadId = item.thread_id as string;
    assert.ok(threadId, 'the item names its Inbox thread');

    const approval = await c.waitForApproval(run.id);
    assert.equal(approval.tool, 'email.reply');
    assert.equal(smtp.messages.length, 0, 'nothing is sent before it is approved');
    await c.decide(approval.id, 'approve');
    assert.equal((await waitForRun(h, run.id)).status, 'completed');

    assert.equal(smtp.messages.length, 1);
    const sent = smtp.messages[0];
    assert.equal(sent.user, mailbox.user, "sent over the mailbox's own SMTP login");
    assert.deepEqual(sent.to, ['carla@example.com']);
    const reply = await simpleParser(sent.raw);
    assert.equal(reply.from?.value[0].address, mailbox.user);
    assert.equal(reply.subject, 'Re: Order 42 never arrived');
    assert.equal(reply.inReplyTo, '<order-42@example.com>');
    assert.deepEqual([reply.references].flat(), ['<order-42@example.com>']);
    assert.equal(reply.text?.trim(), 'Thanks, we are on "Order 42 never arrived"');

    const thread = (await c.call('GET', `/inbox/threads/${threadId}`)).body;
    assert.equal(thread.connection, 'desk');
    assert.deepEqual(
      thread.messages.map((m: Json) => [m.direction, m.from, m.run?.id ?? null]),
      [
        ['inbound', 'Carla Customer <carla@example.com>', run.id],
        ['outbound', 'Help Desk <desk@example.test>', run.id],
      ],
    );

    // The customer answers the reply: the answer joins the thread and starts the next run.
    await deliver({
      from: 'Carla Customer <carla@example.com>',
      subject: 'Re: Order 42 never arrived',
      text: 'Thank you! Any news?',
      messageId: '<order-42-again@example.com>',
      inReplyTo: reply.messageId,
      references: ['<order-42@example.com>', reply.messageId!],
    });
    const threads = await eventually('the answer in the thread', async () => {
      const { data } = (await c.call('GET', `/agents/${agent.id}/inbox`)).body as { data: Json[] };
      return data.length === 1 && data[0].runs.length === 2 ? data : undefined;
    });
    assert.equal(threads[0].id, threadId);
    assert.equal(threads[0].message_count, 3);
  });
});
