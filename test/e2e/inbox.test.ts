// The Inbox in a real browser against the real stack: mail delivered over SMTP to Cadre's listener shows up as a
// thread of the agent with the run it started; on the thread page an operator edits the drafted reply and sends it,
// and the edited reply reaches the recording SMTP server (SMTP_URL) and joins the thread. Each request shows Cadre's
// own SPF/DKIM/DMARC verdict, a failing check marked. Screenshots go to test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { createTransport } from 'nodemailer';
import { simpleParser } from 'mailparser';
import { addMember, createUser } from '../../db/accounts';
import { keepInbound } from '../../db/inbox';
import { secretBox } from '../../db/secret-box';
import { launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, waitForRun, type Harness } from '../support/harness';
import { startSmtpSink, type SmtpSink } from '../support/sinks';
import { startInboxListener, type InboxListener } from '../../services/inbox/smtp-listener';
import { fakeDns } from '../support/dns';

const domain = 'inbox.test';

describe('the Inbox in a browser: threads, runs and an edited reply', function () {
  this.timeout(300_000);
  let h: Harness;
  let sink: SmtpSink;
  let listener: InboxListener;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  const operator = { email: `olga-${randomUUID().slice(0, 6)}@example.test`, password: 'olga password 12' };
  const problems: string[] = [];
  // example.com lets 127.0.0.1 send its mail and publishes a DMARC policy; forged.example.net allows another host.
  const dns = fakeDns();
  dns.txt('example.com', 'v=spf1 ip4:127.0.0.1 -all');
  dns.txt('_dmarc.example.com', 'v=DMARC1; p=none');
  dns.txt('forged.example.net', 'v=spf1 ip4:192.0.2.10 -all');
  dns.txt('_dmarc.forged.example.net', 'v=DMARC1; p=reject');

  before(async function () {
    browser = await launchBrowser(this);
    sink = await startSmtpSink();
    const inbox = { smtpPort: undefined, smtpHost: '127.0.0.1', domain, maxBytes: 1024 * 1024, tls: undefined };
    h = await createHarness({ config: { smtp: { url: sink.url, from: 'Cadre <cadre@test>' }, inbox } });
    listener = await startInboxListener(
      { knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig, resolver: dns.resolver },
      { ...inbox, smtpPort: 0 },
    );
    workspaceId = (await createTestWorkspace(h)).workspace.id;
    const user = await createUser(h.stack.knex, operator);
    await addMember(h.stack.knex, workspaceId, user.id, 'operator');
    ({ server, base } = await startWebWithConsole(h, { secrets: secretBox('inbox') }));
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await listener?.close();
    await h?.close();
    await sink?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  const text = (selector = 'main') => page.innerText(selector);

  it('shows the thread and its run, and sends the reply as the operator edited it', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Support Desk',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'reply' },
        {
          kind: 'tool',
          id: 'reply',
          tool: 'email.reply',
          arguments: { thread_id: '{{thread_id}}', text: 'Thanks, we got {{subject}}' },
        },
      ],
    });

    await page.goto(`${base}/login?next=%2Fagents%2F${agent.id}`);
    await page.fill('#email', operator.email);
    await page.fill('#password', operator.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(new RegExp(`/agents/${agent.id}$`));
    await page.click(`a[href="/agents/${agent.id}/inbox"]`);
    await page.waitForURL(/\/inbox$/);
    const address = (await text('[data-testid="inbox-address"]')).trim();
    assert.match(address, /^support-desk-[0-9a-f]{8}@inbox\.test$/);
    assert.match(await text(), /No mail yet/);

    await createTransport({ host: '127.0.0.1', port: listener.port, secure: false, ignoreTLS: true }).sendMail({
      from: 'Carla Customer <carla@example.com>',
      to: address,
      subject: 'Broken widget',
      messageId: '<widget-1@example.com>',
      text: 'My widget arrived broken.',
    });
    // The run stops at the reply's approval.
    const message = async () => h.stack.knex('inbox_messages').where({ agent_id: agent.id }).first();
    for (let i = 0; i < 300 && !(await message())?.run_id; i++) await new Promise((r) => setTimeout(r, 100));
    const runId = (await message()).run_id as string;
    await waitForRun(h, runId, (r) => r.status === 'needs_review');

    await page.goto(`${base}/agents/${agent.id}/inbox`);
    const list = await text('table.threads');
    assert.match(list, /Broken widget/);
    assert.match(list, /carla@example\.com/);
    assert.match(list, /Needs review/i);
    await shot('inbox-threads');

    await page.click('a:has-text("Broken widget")');
    await page.waitForSelector('[data-testid="draft"] textarea');
    assert.match(await text('[data-testid="message"]'), /My widget arrived broken\./);
    assert.equal((await text('[data-testid="verification"]')).trim(), 'SPF pass · DKIM none · DMARC pass');
    assert.equal(await page.$('[data-testid="verification"] .failed'), null);
    assert.equal(await page.inputValue('[data-testid="draft"] textarea'), 'Thanks, we got Broken widget');
    await page.fill('[data-testid="draft"] textarea', 'Sorry about that: a new widget is on its way.');
    await shot('inbox-thread-draft');
    await page.click('button:has-text("Send reply")');
    await page.waitForSelector('.notice-success, .notice-ok, [role="status"]');
    assert.match(await text(), /Your edited reply is being sent/);

    assert.equal((await waitForRun(h, runId)).status, 'completed');
    for (let i = 0; i < 300 && sink.messages.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    const reply = await simpleParser(sink.messages[0].raw);
    assert.equal(reply.text?.trim(), 'Sorry about that: a new widget is on its way.');
    assert.equal(reply.inReplyTo, '<widget-1@example.com>');
    assert.equal(reply.from?.value[0].address, address);

    await page.goto(`${base}/agents/${agent.id}/inbox`);
    await page.click('a:has-text("Broken widget")');
    await page.waitForSelector('[data-testid="message"] >> nth=1');
    const thread = await text('ol.messages');
    assert.match(thread, /Reply to "Carla Customer" <carla@example\.com>/);
    assert.match(thread, /Sorry about that: a new widget is on its way\./);
    assert.equal(await page.$('[data-testid="draft"]'), null);
    await shot('inbox-thread-replied');
    assert.deepEqual(problems, []);
  });

  it('marks a sender that fails its checks on the thread page (still signed in from the test above)', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Payments Desk',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'count' },
        { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'requests' } },
      ],
    });
    await page.goto(`${base}/agents/${agent.id}/inbox`);
    const address = (await text('[data-testid="inbox-address"]')).trim();
    await createTransport({ host: '127.0.0.1', port: listener.port, secure: false, ignoreTLS: true }).sendMail({
      from: 'The CEO <ceo@forged.example.net>',
      to: address,
      subject: 'Urgent transfer',
      text: 'Wire the money today.',
    });
    const message = async () => h.stack.knex('inbox_messages').where({ agent_id: agent.id }).first();
    for (let i = 0; i < 300 && !(await message())?.run_id; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal((await waitForRun(h, (await message()).run_id)).status, 'completed');

    await page.goto(`${base}/agents/${agent.id}/inbox`);
    await page.click('a:has-text("Urgent transfer")');
    await page.waitForSelector('[data-testid="verification"]');
    assert.match(
      await text('[data-testid="verification"]'),
      /^SPF fail · DKIM none · DMARC fail\s+— the sender may not be who it claims$/,
    );
    const marked = await page.evaluate(
      `[...document.querySelectorAll('[data-testid="verification"] .failed')].map((e) => e.textContent)`,
    );
    assert.deepEqual(marked, ['SPF fail', 'DMARC fail']);
    await shot('inbox-thread-failed-checks');
    assert.deepEqual(problems, []);
  });
  it('shows a thread whose mail came through a connected mailbox, and that replies go out from it', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Mailbox Desk',
      nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }],
    });
    // As an email.received trigger with options.inbox keeps a message it read (activities/inbox-mailbox.ts; the
    // whole path against Dovecot is test/integration/events/email-received.test.ts).
    await keepInbound(
      h.stack.knex,
      workspaceId,
      {
        agent_id: agent.id,
        direction: 'inbound',
        message_id: '<lost-parcel@example.com>',
        in_reply_to: null,
        references: [],
        from_address: 'Carla Customer <carla@example.com>',
        to_addresses: ['desk@example.test'],
        subject: 'Lost parcel',
        text: 'Where is my parcel?',
        attachments: [],
        authentication_results: null,
        received_spf: null,
      },
      { connection: 'desk' },
    );
    await page.goto(`${base}/agents/${agent.id}/inbox`);
    assert.match(await text('table.threads tbody tr'), /Lost parcel\s+via mailbox desk/);
    await page.click('a:has-text("Lost parcel")');
    await page.waitForSelector('[data-testid="thread-mailbox"]');
    assert.match(
      await text('[data-testid="thread-mailbox"]'),
      /This mail came through the connected mailbox desk; replies go out\s+from it\./,
    );
    await shot('inbox-thread-from-mailbox');
    assert.deepEqual(problems, []);
  });
});
