// The email connector against real servers: Debian's Dovecot over IMAP (test/support/dovecot.ts) and an SMTP
// submission server that asks for a login (test/support/smtp-submission.ts). An agent finds an unseen invoice,
// reads it, saves its PDF as a run file, marks it read and files it, and replies: the writes wait for a reviewer,
// the reply goes out once even when its step is retried, and the passwords are never answered or stored in plain.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { ImapFlow } from 'imapflow';
import MailComposer from 'nodemailer/lib/mail-composer';
import { emailConfigSchema } from '../../../model/connectors/email';
import { emailImplementation } from '../../../activities/connectors/email';
import type { OpenedConnection } from '../../../activities/connectors/connector';
import type { ToolContext } from '../../../activities/tools/tool-context';
import { createHarness, createTestWorkspace, items, startApi, waitForRun, type Harness } from '../../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';
import { startDovecot, type Dovecot } from '../../support/dovecot';
import { startSmtpSubmission, type SmtpSubmission } from '../../support/smtp-submission';

const mailbox = { user: 'ap@example.test', password: 'imap-secret-7c1e90' };
const smtpPassword = 'smtp-secret-41d2aa';
const pdf = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(5000), Buffer.from('\n%%EOF\n')]);

async function compose(mail: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> {
  return new MailComposer(mail).compile().build();
}

describe('connectors: email (IMAP and SMTP)', function () {
  this.timeout(180_000);
  let dovecot: Dovecot;
  let smtp: SmtpSubmission;
  let imap: ImapFlow; // the mailbox as its owner sees it
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let key: string;

  const config = (extra: Json = {}) => ({
    imap: { host: dovecot.host, port: dovecot.port, secure: false, user: mailbox.user },
    smtp: { host: smtp.host, port: smtp.port, secure: false },
    from: 'Accounts Payable <ap@example.test>',
    ...extra,
  });
  const credentials = { password: mailbox.password, smtp_password: smtpPassword };

  /** The connection as a run opens it, for calling the connector's code directly. */
  const opened = (extra: Json = {}, allowHosts = ['127.0.0.1']): OpenedConnection => ({
    name: 'mail',
    kind: 'email',
    config: emailConfigSchema.parse(config(extra)),
    credentials,
    version: `test:${randomUUID()}`,
    limits: { allowHosts },
  });
  const toolContext = (idempotencyKey: string): ToolContext => ({
    idempotencyKey,
    http: { allowHosts: ['127.0.0.1'] },
    smtp: { from: 'cadre@test' },
  });

  /** UIDs of the messages in `folder` whose subject contains `subject` (all of them for ''). */
  async function uidsIn(folder: string, subject: string): Promise<number[]> {
    const lock = await imap.getMailboxLock(folder);
    try {
      await imap.noop(); // hear of what other sessions changed
      return ((await imap.search(subject ? { subject } : { all: true }, { uid: true })) || []) as number[];
    } finally {
      lock.release();
    }
  }
  async function flagsOf(folder: string, uid: number): Promise<string[]> {
    const lock = await imap.getMailboxLock(folder);
    try {
      await imap.noop();
      const msg = await imap.fetchOne(String(uid), { flags: true }, { uid: true });
      return msg ? [...(msg.flags ?? [])] : [];
    } finally {
      lock.release();
    }
  }

  before(async () => {
    dovecot = await startDovecot([mailbox]);
    smtp = await startSmtpSubmission({ user: mailbox.user, password: smtpPassword });
    imap = await dovecot.as(mailbox);
    await imap.mailboxCreate('Processed');
    await imap.append(
      'INBOX',
      await compose({
        from: 'Acme Billing <billing@acme.test>',
        to: mailbox.user,
        subject: 'Invoice 1041',
        text: 'Paid already.',
        messageId: '<inv-1041@acme.test>',
      }),
      ['\\Seen'],
    );
    await imap.append(
      'INBOX',
      await compose({
        from: 'Acme Billing <billing@acme.test>',
        to: mailbox.user,
        subject: 'Invoice 1042',
        text: 'Dear customer,\n\nplease find invoice 1042 for EUR 1,250.00 attached.\n\nAcme Billing',
        messageId: '<inv-1042@acme.test>',
        attachments: [
          { filename: 'invoice-1042.pdf', content: pdf, contentType: 'application/pdf' },
          { filename: 'lines.csv', content: 'sku,qty\nA-1,3\n', contentType: 'text/csv' },
        ],
      }),
    );
    await imap.append(
      'INBOX',
      await compose({
        from: 'News <news@example.test>',
        to: mailbox.user,
        subject: 'Weekly news',
        html: '<html><body><h1>This week</h1><p>Ten <b>new</b> things &amp; more.</p></body></html>',
      }),
    );

    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    c = connectorApi(h, api.url, t.key, t.workspace.id);
    await c.connect('mail', 'email', config(), credentials); // the agents' mailbox
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await smtp?.close();
    await dovecot?.stop();
  });

  it('refuses a wrong password at once, connects with the right one and never answers or stores it in plain', async () => {
    const wrong = await c.call('POST', '/connections', {
      name: 'wrong',
      kind: 'email',
      config: config(),
      credentials: { password: 'not-the-password' },
    });
    assert.equal(wrong.status, 422);
    assert.match(
      wrong.body.detail,
      /IMAP server 127\.0\.0\.1:\d+ refused the login of ap@example\.test: check the user and password/,
    );

    const badSmtp = await c.call('POST', '/connections', {
      name: 'bad-smtp',
      kind: 'email',
      config: config(),
      credentials: { password: mailbox.password, smtp_password: 'nope' },
    });
    assert.equal(badSmtp.status, 422);
    assert.match(badSmtp.body.detail, /SMTP server 127\.0\.0\.1:\d+ refused the login of ap@example\.test/);

    const made = await c.connect('checked', 'email', config(), credentials);
    const answered = JSON.stringify(made);
    assert.ok(!answered.includes(mailbox.password) && !answered.includes(smtpPassword), answered);
    assert.deepEqual(made.can, [
      'search',
      'read',
      'download attachments',
      'move (asks approval)',
      'flag (asks approval)',
      'send (asks approval)',
    ]);
    const tested = await c.call('POST', `/connections/${made.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.match(tested.body.server_version, /Dovecot/);
    assert.deepEqual(tested.body.found, ['INBOX', 'Processed', 'Sent', 'Trash']);

    const row = await h.stack.knex('connections').where({ id: made.id }).first();
    const stored = JSON.stringify(row);
    assert.ok(!stored.includes(mailbox.password) && !stored.includes(smtpPassword), 'sealed at rest');
    const listed = JSON.stringify((await c.call('GET', '/connections')).body);
    assert.ok(!listed.includes(mailbox.password) && !listed.includes(smtpPassword));

    // Without SMTP settings a mailbox only reads: its agents are not offered sending.
    const { smtp: _none, ...readOnly } = config();
    const reader = await c.connect('reader', 'email', readOnly, { password: mailbox.password });
    assert.deepEqual(reader.can, [
      'search',
      'read',
      'download attachments',
      'move (asks approval)',
      'flag (asks approval)',
    ]);

    const connectors = await c.call('GET', '/connectors');
    const email = connectors.body.data.find((k: Json) => k.kind === 'email');
    assert.deepEqual(
      email.tools.map((t: Json) => [t.name, t.approval_default]),
      [
        ['email.search', 'never'],
        ['email.read', 'never'],
        ['email.download_attachments', 'never'],
        ['email.move', 'always'],
        ['email.flag', 'always'],
        ['email.send', 'always'],
      ],
    );
    assert.deepEqual(
      email.events.map((e: Json) => e.name),
      ['email.received'],
    );
  });

  it('reaches a private address only when the operator allows the host', async () => {
    await assert.rejects(
      emailImplementation.check(opened({}, [])),
      /127\.0\.0\.1 resolves to 127\.0\.0\.1, a private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/,
    );
  });

  it('an agent finds the unseen invoice, saves its PDF, and files it and replies only as a reviewer approves', async () => {
    const [uid] = await uidsIn('INBOX', 'Invoice 1042');
    const { started } = await c.runOf(
      {
        name: 'invoices',
        connections: ['mail'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'find' },
          {
            kind: 'tool',
            id: 'find',
            tool: 'email.search',
            arguments: { connection: 'mail', subject: 'invoice', unseen: true },
            save_as: 'found',
            next: 'read',
          },
          {
            kind: 'tool',
            id: 'read',
            tool: 'email.read',
            arguments: { connection: 'mail', uid: '{{found.messages.0.uid}}' },
            save_as: 'mail',
            next: 'save',
          },
          {
            kind: 'tool',
            id: 'save',
            tool: 'email.download_attachments',
            arguments: { connection: 'mail', uid: '{{mail.uid}}', names: ['invoice-1042.pdf'] },
            save_as: 'saved',
            next: 'seen',
          },
          {
            kind: 'tool',
            id: 'seen',
            tool: 'email.flag',
            arguments: { connection: 'mail', uid: '{{mail.uid}}', add: ['\\Seen'] },
            next: 'file',
          },
          {
            kind: 'tool',
            id: 'file',
            tool: 'email.move',
            arguments: { connection: 'mail', uid: '{{mail.uid}}', to: 'Processed' },
            save_as: 'filed',
            next: 'reply',
          },
          {
            kind: 'tool',
            id: 'reply',
            tool: 'email.send',
            arguments: {
              connection: 'mail',
              to: '{{mail.reply_to}}',
              subject: 'Re: {{mail.subject}}',
              text: 'Thank you, we received invoice 1042.',
              in_reply_to: '{{mail.message_id}}',
            },
            save_as: 'sent',
          },
        ],
      },
      [{}],
    );

    // Flagging waits for a reviewer: the message is still unread, in INBOX.
    const flagging = await c.waitForApproval(started.id);
    assert.deepEqual([flagging.tool, flagging.node_id], ['email.flag', 'seen']);
    assert.ok(!(await flagsOf('INBOX', uid)).includes('\\Seen'));
    await c.decide(flagging.id, 'approve');

    const moving = await c.waitForApproval(started.id);
    assert.deepEqual([moving.tool, moving.arguments.to], ['email.move', 'Processed']);
    assert.deepEqual(await uidsIn('INBOX', 'Invoice 1042'), [uid], 'not moved before it is approved');
    assert.ok((await flagsOf('INBOX', uid)).includes('\\Seen'), 'marked read once approved');
    await c.decide(moving.id, 'approve');

    const replying = await c.waitForApproval(started.id);
    assert.deepEqual([replying.tool, replying.arguments.to], ['email.send', 'Acme Billing <billing@acme.test>']);
    assert.equal(smtp.messages.length, 0, 'nothing sent before it is approved');
    await c.decide(replying.id, 'approve');

    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    const [item] = await items(h, started.id);
    assert.equal(item.status, 'done', item.error);
    const data = item.data;

    assert.equal(data.found.total, 1, 'only the unseen invoice');
    const hit = data.found.messages[0];
    assert.equal(hit.subject, 'Invoice 1042');
    assert.equal(hit.from, 'Acme Billing <billing@acme.test>');
    assert.deepEqual(hit.attachments, ['invoice-1042.pdf', 'lines.csv']);
    assert.match(hit.snippet, /^Dear customer, please find invoice 1042 for EUR 1,250\.00 attached\./);

    assert.equal(data.mail.message_id, '<inv-1042@acme.test>');
    assert.match(data.mail.text, /please find invoice 1042 for EUR 1,250\.00 attached\.\n\nAcme Billing/);
    assert.deepEqual(
      data.mail.attachments.map((a: Json) => [a.name, a.content_type]),
      [
        ['invoice-1042.pdf', 'application/pdf'],
        ['lines.csv', 'text/csv'],
      ],
    );
    const size = data.mail.attachments[0].size;
    assert.ok(Math.abs(size - pdf.length) < 100, `about ${pdf.length} bytes, not ${size}`);

    // The PDF is a file of the run, byte for byte.
    assert.equal(data.saved.files.length, 1);
    const file = data.saved.files[0];
    assert.deepEqual([file.name, file.content_type, file.size], ['invoice-1042.pdf', 'application/pdf', pdf.length]);
    const res = await fetch(`${api.url}/v1/runs/${started.id}/files/${file.file_id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(pdf), 'the saved bytes are the attachment');

    // Filed in Processed, read; gone from INBOX.
    assert.deepEqual(await uidsIn('INBOX', 'Invoice 1042'), []);
    const [filed] = await uidsIn('Processed', 'Invoice 1042');
    assert.equal(data.filed.new_uid, filed);
    assert.ok((await flagsOf('Processed', filed)).includes('\\Seen'));

    // One reply, in the thread, as the mailbox, through its SMTP login.
    assert.equal(smtp.messages.length, 1);
    const [reply] = smtp.messages;
    assert.equal(reply.user, mailbox.user);
    assert.deepEqual(reply.to, ['billing@acme.test']);
    assert.equal(reply.from, 'ap@example.test');
    assert.match(reply.raw, /^In-Reply-To: <inv-1042@acme\.test>$/m);
    assert.match(reply.raw, /^Subject: Re: Invoice 1042$/m);
    assert.match(reply.raw, new RegExp(`^Message-ID: ${data.sent.message_id}$`, 'm'));
    assert.match(data.sent.message_id, /@example\.test>$/);
  });

  it('a rejected move leaves the message where it was', async () => {
    const [uid] = await uidsIn('INBOX', 'Weekly news');
    const { started } = await c.runOf(
      {
        name: 'tidy',
        connections: ['mail'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'file' },
          { kind: 'tool', id: 'file', tool: 'email.move', arguments: { connection: 'mail', uid, to: 'Trash' } },
        ],
      },
      [{}],
    );
    const approval = await c.waitForApproval(started.id);
    await c.decide(approval.id, 'reject');
    await waitForRun(h, started.id);
    const [item] = await items(h, started.id);
    assert.equal(item.status, 'skipped');
    assert.deepEqual(await uidsIn('INBOX', 'Weekly news'), [uid]);
    assert.deepEqual(await uidsIn('Trash', 'Weekly news'), []);
  });

  it('searches by sender, dates and flags, newest first', async () => {
    const search = (criteria: Json) =>
      emailImplementation.handlers['email.search'](
        { connection: 'mail', limit: 20, ...criteria },
        opened(),
        toolContext('search'),
      ) as Promise<Json>;
    const news = await search({ from: 'news@example.test', since: '2000-01-01' });
    assert.deepEqual(
      news.messages.map((m: Json) => [m.subject, m.snippet]),
      [['Weekly news', 'THIS WEEK Ten new things & more.']],
    );
    assert.equal((await search({ before: '2000-01-01' })).total, 0);
    const all = await uidsIn('INBOX', '');
    const newest = await search({ limit: 1 });
    assert.equal(newest.total, all.length);
    assert.deepEqual(
      newest.messages.map((m: Json) => m.uid),
      [Math.max(...all)],
      'the newest, within the limit',
    );
    const read = await search({ from: 'billing@acme.test', unseen: false });
    assert.ok(read.messages.length > 0);
    assert.ok(read.messages.every((m: Json) => m.flags.includes('\\Seen') && m.subject.startsWith('Invoice')));
  });

  it('reads an HTML-only message as text, and says plainly what is not there', async () => {
    const [uid] = await uidsIn('INBOX', 'Weekly news');
    const c1 = opened();
    const ctx = toolContext('read-html');
    const read = (await emailImplementation.handlers['email.read']({ connection: 'mail', uid }, c1, ctx)) as Json;
    assert.match(read.text, /THIS WEEK\s+Ten new things & more\./i);
    assert.equal(read.has_html, true);
    assert.deepEqual(read.attachments, []);

    await assert.rejects(
      emailImplementation.handlers['email.read']({ connection: 'mail', uid: 9999 }, c1, ctx),
      /there is no message 9999 in "INBOX"/,
    );
    await assert.rejects(
      emailImplementation.handlers['email.search']({ connection: 'mail', folder: 'Archive', limit: 5 }, c1, ctx),
      /the mailbox ap@example\.test has no folder "Archive" \(it has INBOX, Processed, Sent, Trash\)/,
    );
    await assert.rejects(
      emailImplementation.handlers['email.download_attachments'](
        { connection: 'mail', uid, names: ['report.pdf'] },
        c1,
        { ...ctx, saveFile: async () => ({}) },
      ),
      /message \d+ has no attachment "report\.pdf" \(it has none\)/,
    );
  });

  it('a retried send with the same idempotency key sends once (the sent folder remembers it)', async () => {
    const conn = opened({ save_sent: true }); // the SMTP server here keeps no copy itself
    const send = (key: string) =>
      emailImplementation.handlers['email.send'](
        { connection: 'mail', to: 'vendor@example.test', subject: 'Remittance 77', text: 'Paid.' },
        conn,
        toolContext(key),
      ) as Promise<Json>;
    const before = smtp.messages.length;
    const first = await send('run-1:0:pay');
    const again = await send('run-1:0:pay');
    assert.equal(smtp.messages.length, before + 1, 'one message reached the server');
    assert.equal(again.already_sent, true);
    assert.equal(again.message_id, first.message_id);
    assert.deepEqual(await uidsIn('Sent', 'Remittance 77').then((u) => u.length), 1, 'one copy kept in Sent');

    const other = await send('run-1:1:pay');
    assert.notEqual(other.message_id, first.message_id, 'another item is another message');
    assert.equal(smtp.messages.length, before + 2);
  });

  it('a send whose answer was lost is retried by the engine without sending twice', async () => {
    // Like Gmail, this server files what it accepts in Sent; the first answer is lost as a dropped connection would.
    const sentCopies = await dovecot.as(mailbox);
    let lostOnce = false;
    smtp.onMessage = async (message) => {
      await sentCopies.append('Sent', message.raw, ['\\Seen']);
      if (!lostOnce) {
        lostOnce = true;
        throw Object.assign(new Error('Temporary failure, try again'), { responseCode: 451 });
      }
    };
    const before = smtp.messages.length;
    try {
      const { started } = await c.runOf(
        {
          name: 'notify',
          connections: ['mail'],
          nodes: [
            { kind: 'input', id: 'in', format: 'json', next: 'send' },
            {
              kind: 'tool',
              id: 'send',
              tool: 'email.send',
              arguments: { connection: 'mail', to: '{{to}}', subject: 'Statement {{n}}', text: 'Attached soon.' },
              save_as: 'sent',
            },
          ],
          policy: { approvals: { 'email.send': { mode: 'never' } }, error_policy: { retries: 2 } },
        },
        [{ to: 'client@example.test', n: 5 }],
      );
      await waitForRun(h, started.id);
      const [item] = await items(h, started.id);
      assert.equal(item.status, 'done', item.error);
      assert.equal(lostOnce, true, 'the first attempt did fail');
      assert.equal(item.data.sent.already_sent, true, 'the retry found it in Sent');
      assert.equal(smtp.messages.length - before, 1, 'the client got one message');
    } finally {
      smtp.onMessage = undefined;
    }
  });

  it('email.received: a new message after the cursor is one event, the next poll none; a new UIDVALIDITY starts over', async () => {
    const poll = emailImplementation.pollers!['email.received'];
    const conn = opened();
    const start = await poll(conn, undefined, {});
    assert.deepEqual(start.events, [], 'a new trigger does not replay the folder');
    assert.match(start.cursor, /^\d+:\d+$/);

    await imap.append(
      'INBOX',
      await compose({
        from: 'Globex <ar@globex.test>',
        to: mailbox.user,
        subject: 'Invoice G-7',
        text: 'Invoice G-7 is attached.',
        attachments: [{ filename: 'g-7.pdf', content: pdf }],
      }),
    );
    const first = await poll(conn, start.cursor, {});
    assert.equal(first.events.length, 1);
    const [event] = first.events;
    assert.equal(event.data.subject, 'Invoice G-7');
    assert.equal(event.data.from, 'Globex <ar@globex.test>');
    assert.deepEqual(event.data.attachments, ['g-7.pdf']);
    assert.equal(event.data.folder, 'INBOX');
    assert.equal(event.id, first.cursor, 'the event is known by UIDVALIDITY:UID, as the cursor');

    const second = await poll(conn, first.cursor, {});
    assert.deepEqual(second.events, []);
    assert.equal(second.cursor, first.cursor);

    const [validity] = first.cursor.split(':');
    const rebuilt = await poll(conn, `${Number(validity) + 1}:1`, {});
    assert.deepEqual(rebuilt.events, [], 'a changed UIDVALIDITY does not replay history');
    assert.equal(rebuilt.cursor, first.cursor);
  });
});
