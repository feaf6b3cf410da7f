// The shipped example examples/book-emailed-invoices.json, end to end on real servers: an invoice email arrives in
// a Dovecot mailbox, the agent's email.received trigger polls it and starts a run, the model (the local
// Anthropic-compatible server) extracts the invoice, the booking into PostgreSQL waits for a reviewer, then the
// email is filed under Processed and a summary is posted to Slack's #finance (a local server of Slack's Web API).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { ImapFlow } from 'imapflow';
import MailComposer from 'nodemailer/lib/mail-composer';
import { parseAgentSpec } from '../../../model/agent-checks';
import { reply, startFakeAnthropic, toolUse, itemOf, type FakeAnthropic } from '../../fakes/anthropic';
import { startFakeSlack, type FakeSlack } from '../../fakes/slack-api';
import { connectorApi, pollNow, type ConnectorApi, type Json } from '../../support/connections';
import { startDovecot, type Dovecot } from '../../support/dovecot';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startApi,
  waitForRun,
  type Harness,
} from '../../support/harness';
import { startPostgresServer, type DatabaseServer } from '../../support/servers';

const example = path.join(__dirname, '../../../examples/book-emailed-invoices.json');
const pdf = Buffer.from('%PDF-1.4\n% an invoice\n%%EOF\n');

describe('example: Book emailed invoices (IMAP → model → SQL → Slack)', function () {
  this.timeout(300_000);
  const mailbox = { user: 'ap@example.test', password: 'mailbox-secret-7' };
  const botToken = 'xoxb-finance-bot-1';
  let dovecot: Dovecot;
  let imap: ImapFlow;
  let books: DatabaseServer;
  let slack: FakeSlack;
  let model: FakeAnthropic;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let ws = '';

  before(async () => {
    [dovecot, books, slack, model] = await Promise.all([
      startDovecot([mailbox]),
      startPostgresServer(),
      startFakeSlack(),
      startFakeAnthropic(),
    ]);
    imap = await dovecot.as(mailbox);
    await imap.mailboxCreate('Processed');
    await books.admin.schema.createTable('invoices', (t) => {
      t.increments('id');
      t.string('supplier').notNullable();
      t.string('invoice_number').notNullable();
      t.decimal('amount', 12, 2).notNullable();
      t.string('currency', 3).notNullable();
      t.string('message_id');
    });
    await books.admin.raw('grant all on invoices, invoices_id_seq to app');
    slack.addBotToken(botToken);
    slack.addChannel('finance');

    h = await createHarness({
      config: {
        http: { allowHosts: ['127.0.0.1'] }, // every server of this test is on this machine
        model: { apiKey: 'test-key', baseUrl: model.url, name: 'claude-test', unavailableRetries: 0 },
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    ws = t.workspace.id;
    c = connectorApi(h, api.url, t.key, ws);
    await c.connect(
      'mailbox',
      'email',
      { imap: { host: dovecot.host, port: dovecot.port, secure: false, user: mailbox.user }, from: mailbox.user },
      { password: mailbox.password },
    );
    await c.connect(
      'books',
      'postgres',
      { host: books.host, port: books.port, database: books.database, user: books.user, allow_writes: true },
      { password: books.password },
    );
    await c.connect('team', 'slack', { api_url: `${slack.url}/api/` }, { bot_token: botToken });
  });
  after(async () => {
    await imap?.logout().catch(() => undefined);
    await api?.close();
    await h?.close();
    await Promise.all([dovecot?.stop(), books?.stop(), slack?.close(), model?.close()]);
  });

  async function uidsIn(folder: string): Promise<number[]> {
    const lock = await imap.getMailboxLock(folder);
    try {
      await imap.noop();
      return ((await imap.search({ all: true }, { uid: true })) || []) as number[];
    } finally {
      lock.release();
    }
  }

  it('books an emailed invoice after approval, files the email and tells #finance', async () => {
    const spec = parseAgentSpec(JSON.parse(fs.readFileSync(example, 'utf8')));
    const agent = await createLiveAgent(h, ws, spec);
    const trigger = await c.call('POST', `/agents/${agent.id}/triggers`, {
      kind: 'event',
      connection: 'mailbox',
      event: 'email.received',
      poll_interval_seconds: 3600, // the mailbox watch (IMAP IDLE) fires its poll when mail arrives
    });
    assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
    const poll = async () => String(await pollNow(h, trigger.body));
    assert.match(await poll(), /0 events/, 'mail from before the trigger is not its business');

    model.setHandler((body) => {
      const item = itemOf(body) as { message?: { text?: string } };
      assert.match(item.message?.text ?? '', /invoice 1042 for EUR 1,250\.00/, 'the model reads the email');
      return reply([
        toolUse('submit_output', {
          supplier: 'Acme Billing',
          invoice_number: '1042',
          amount: 1250,
          currency: 'EUR',
        }),
      ]);
    });
    const raw = await new MailComposer({
      from: 'Acme Billing <billing@acme.test>',
      to: mailbox.user,
      subject: 'Invoice 1042',
      text: 'Dear customer,\n\nplease find invoice 1042 for EUR 1,250.00 attached.\n\nAcme Billing',
      messageId: '<inv-1042@acme.test>',
      attachments: [{ filename: 'invoice-1042.pdf', content: pdf, contentType: 'application/pdf' }],
    })
      .compile()
      .build();
    await imap.append('INBOX', raw);
    let run;
    for (let i = 0; i < 600 && !run; i++) {
      [run] = await h.stack.knex('runs').where({ agent_id: agent.id, trigger: 'event' });
      if (!run) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(run, 'the invoice email started a run');
    const pending = await c.waitForApproval(run.id);
    assert.equal(pending.tool, 'sql.insert');
    assert.deepEqual(pending.arguments.rows, [
      {
        supplier: 'Acme Billing',
        invoice_number: '1042',
        amount: 1250,
        currency: 'EUR',
        message_id: '<inv-1042@acme.test>',
      },
    ]);
    assert.equal((await books.admin('invoices')).length, 0, 'nothing is booked before a reviewer approves');
    assert.equal((await uidsIn('Processed')).length, 0);
    await c.decide(pending.id, 'approve');

    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed', JSON.stringify(await items(h, run.id)));
    const booked = await books.admin('invoices').select('supplier', 'invoice_number', 'amount', 'currency');
    assert.deepEqual(booked, [
      { supplier: 'Acme Billing', invoice_number: '1042', amount: '1250.00', currency: 'EUR' },
    ]);
    assert.deepEqual(await uidsIn('INBOX'), [], 'the email was filed');
    assert.equal((await uidsIn('Processed')).length, 1);
    assert.deepEqual(
      slack.messages('finance').map((m) => m.text),
      ['Booked invoice 1042 from Acme Billing: 1250 EUR'],
    );
    const [item] = await items(h, run.id);
    assert.deepEqual((item.output as Json) ?? {}, {
      supplier: 'Acme Billing',
      invoice_number: '1042',
      amount: 1250,
      currency: 'EUR',
    });
    assert.match(await poll(), /0 events/, 'the filed email does not come again');

    // The attachment came with the event: a file of the run, listed in its item.
    const files = await h.stack.knex('files').where({ run_id: run.id }).whereNot({ name: 'report.csv' });
    assert.deepEqual(
      files.map((f) => [f.name, f.content_type, Buffer.compare(Buffer.from(f.content), pdf)]),
      [['invoice-1042.pdf', 'application/pdf', 0]],
    );
    assert.deepEqual((item.data as Json).files, [
      { file_id: files[0].id, name: 'invoice-1042.pdf', size: pdf.length, content_type: 'application/pdf' },
    ]);
  });
});
