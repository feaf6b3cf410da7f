// The Inbox in a real browser against the real stack: mail delivered over SMTP to Cadre's listener shows up as a
// thread of the agent with the run it started; on the thread page an operator edits the drafted reply and sends it,
// and the edited reply reaches the recording SMTP server (SMTP_URL) and joins the thread. Screenshots go to
// test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { createTransport } from 'nodemailer';
import { simpleParser } from 'mailparser';
import { addMember, createUser } from '../../db/accounts';
import { secretBox } from '../../db/secret-box';
import { launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, waitForRun, type Harness } from '../support/harness';
import { startSmtpSink, type SmtpSink } from '../support/sinks';
import { startInboxListener, type InboxListener } from '../../api/inbox/smtp-listener';

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

  before(async function () {
    browser = await launchBrowser(this);
    sink = await startSmtpSink();
    const inbox = { smtpPort: undefined, smtpHost: '127.0.0.1', domain, maxBytes: 1024 * 1024, tls: undefined };
    h = await createHarness({ config: { smtp: { url: sink.url, from: 'Cadre <cadre@test>' }, inbox } });
    listener = await startInboxListener(
      { knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig },
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
});
