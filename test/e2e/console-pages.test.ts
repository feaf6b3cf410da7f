// Every page of the console in a real browser against the real stack, with data on it: axe-core finds no serious or
// critical accessibility problem on any of them, a keyboard reaches "Skip to content" first, and at a phone's width
// (390 px) the navigation folds behind Menu and run details fit the screen. Pages are listed from ui/src/routes, so
// a new page without a visit here fails the suite. Screenshots go to test-output/screenshots.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { createPasswordReset } from '../../db/accounts';
import { createConversation } from '../../db/chat';
import { storeMessage } from '../../db/inbox';
import { createInvitation } from '../../db/invitations';
import { createRunLink } from '../../db/run-links';
import { loadSecretBox } from '../../db/secret-box';
import { hydrated, launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { memberWithRole, type Person } from '../support/people';

const routesDir = path.join(__dirname, '..', '..', 'ui', 'src', 'routes');

/** Every page of the console as its route pattern (`/agents/[id]`), from the +page.svelte files under ui/src/routes. */
function consolePages(dir = routesDir, prefix = ''): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) found.push(...consolePages(path.join(dir, entry.name), `${prefix}/${entry.name}`));
    else if (entry.name === '+page.svelte') found.push(prefix || '/');
  }
  return found.sort();
}

const gated = {
  name: 'Payments to approve',
  nodes: [
    { kind: 'input', id: 'in', format: 'csv', next: 'gate' },
    { kind: 'approval', id: 'gate', message: 'Pay {{amount}} to {{vendor}}?', next: 'out' },
    { kind: 'output', id: 'out', format: 'csv', file_name: 'paid.csv' },
  ],
};

describe('every console page: accessibility, keyboard, and a phone-width layout', function () {
  this.timeout(600_000);
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let owner: Person;
  const urls: Record<string, string> = {};
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    h = await createHarness();
    const { workspace, key } = await createTestWorkspace(h);
    ({ server, base } = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) }));
    owner = await memberWithRole(h.stack.knex, base, workspace.id, 'owner');
    const knex = h.stack.knex;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the API's answers, read field by field
    const asKey = async (route: string, body?: unknown, method = body === undefined ? 'GET' : 'POST'): Promise<any> => {
      const res = await fetch(`${base}/v1${route}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = await res.json();
      assert.ok(res.ok, `${route}: ${JSON.stringify(json)}`);
      return json;
    };

    // An agent whose run waits on an approval: run details, approvals, the dashboard and Run Mode have something.
    const agent = await createLiveAgent(h, workspace.id, gated);
    const input = 'vendor,amount,note\nAcme,120.50,first\nGlobex Corporation International,18250,a long note\n';
    const run = await startTestRun(h, workspace.id, agent.id, input);
    await waitForRun(h, run.id, (r) => r.status === 'needs_review');
    const testRun = await asKey(`/agents/${agent.id}/test-runs`, { version: 1, from_run: run.id, items: [0] });
    const form = await asKey(`/agents/${agent.id}/triggers`, {
      kind: 'form',
      title: 'Ask for a payment',
      fields: [{ name: 'vendor', label: 'Vendor' }],
    });
    const { token } = await createRunLink(knex, agent, 'Payments desk');
    const linkRun = await startTestRun(h, workspace.id, agent.id, 'vendor,amount\nInitech,5\n');
    const skill = await asKey('/skills', { name: 'tone', content: 'Be brief and polite.' });
    const upload = new FormData();
    upload.append(
      'files',
      new Blob(['Invoices above 10000 need two approvals.'], { type: 'text/plain' }),
      'policy.txt',
    );
    upload.append('name', 'Payment policy');
    const uploaded = await fetch(`${base}/v1/sources`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: upload,
    });
    assert.equal(uploaded.status, 202, await uploaded.clone().text());
    const source = await knex('sources').where({ workspace_id: workspace.id }).first('id');
    let passage: { id: string } | undefined;
    for (let tries = 0; !passage; tries++) {
      assert.ok(tries < 600, 'the source is indexed');
      passage = await knex('passages')
        .join('source_versions', 'source_versions.id', 'passages.version_id')
        .where('source_versions.source_id', source.id)
        .first('passages.id');
      if (!passage) await new Promise((r) => setTimeout(r, 200));
    }
    const thread = await storeMessage(knex, workspace.id, undefined, {
      agent_id: agent.id,
      direction: 'inbound',
      message_id: '<pay-1@example.test>',
      in_reply_to: null,
      references: [],
      from_address: 'sam@example.test',
      to_addresses: ['payments@inbox.test'],
      subject: 'Please pay Acme',
      text: 'Hello, could you pay the Acme invoice?',
      attachments: [],
      authentication_results: null,
      received_spf: null,
    });
    const conversation = await createConversation(knex, {
      workspaceId: workspace.id,
      owner: owner.email,
      agentId: agent.id,
      title: 'About payments',
    });
    const user = await knex('users').where({ email: owner.email }).first('id');

    Object.assign(urls, {
      '/agents': '/agents',
      '/agents/[id]': `/agents/${agent.id}`,
      '/agents/[id]/edit': `/agents/${agent.id}/edit`,
      '/agents/[id]/inbox': `/agents/${agent.id}/inbox`,
      '/agents/[id]/inbox/[thread]': `/agents/${agent.id}/inbox/${thread!.thread_id}`,
      '/agents/[id]/test-runs/[runId]': `/agents/${agent.id}/test-runs/${testRun.id}`,
      '/agents/[id]/versions': `/agents/${agent.id}/versions`,
      '/agents/new': '/agents/new',
      '/approvals': '/approvals',
      '/chat': '/chat',
      '/chat/[id]': `/chat/${conversation.id}`,
      '/citations/[id]': `/citations/${passage.id}?run=${run.id}`,
      '/dashboard': '/dashboard',
      '/integrations': '/integrations',
      '/reviews': '/reviews',
      '/runs': '/runs',
      '/runs/[id]': `/runs/${run.id}`,
      '/settings': '/settings',
      '/skills': '/skills',
      '/skills/[id]': `/skills/${skill.id}`,
      '/sources': '/sources',
      '/sources/[id]': `/sources/${source.id}`,
      '/sources/[id]/versions/[version]': `/sources/${source.id}/versions/1`,
      // Public pages, read by someone not signed in.
      '/forgot-password': '/forgot-password',
      '/forms/[id]': `/forms/${form.id}`,
      '/invite/[token]': new URL(
        (await createInvitation(knex, { workspaceId: workspace.id, role: 'editor', publicUrl: base })).url,
      ).pathname,
      '/login': '/login',
      '/r/[token]': `/r/${token}`,
      '/r/[token]/runs/[runId]': `/r/${token}/runs/${linkRun.id}`,
      '/reset-password/[token]': new URL((await createPasswordReset(knex, user.id, base)).url).pathname,
      '/signup': '/signup',
    });

    page = await newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => problems.push(e.message));
    await signIn(page);
  });

  /** A page in a browser context of its own (axe-core analyses pages of contexts made by newContext). */
  async function newPage(options: object): Promise<Page & { close(): Promise<void> }> {
    const context = await (
      browser as unknown as { newContext(o: object): Promise<{ newPage(): Promise<Page> }> }
    ).newContext(options);
    return (await context.newPage()) as Page & { close(): Promise<void> };
  }

  async function signIn(p: Page) {
    await p.goto(`${base}/login`);
    await hydrated(p);
    await p.fill('#email', owner.email);
    await p.fill('#password', owner.password);
    await p.click('button:has-text("Sign in")');
    await p.waitForURL(/\/dashboard$/);
  }

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
  });

  const shot = (p: Page, name: string) => p.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  const publicPages = [
    '/forgot-password',
    '/forms/[id]',
    '/invite/[token]',
    '/login',
    '/r/[token]',
    '/r/[token]/runs/[runId]',
    '/reset-password/[token]',
    '/signup',
  ];

  it('visits every page listed in ui/src/routes', () => {
    assert.deepEqual(consolePages(), Object.keys(urls).sort());
  });

  /** Every page's serious and critical axe-core violations, read by `signedIn` or by someone not signed in. */
  async function axeViolations(signedIn: Page, viewport: object): Promise<string[]> {
    const anonymous = await newPage(viewport);
    const found: string[] = [];
    for (const route of Object.keys(urls).sort()) {
      const p = publicPages.includes(route) ? anonymous : signedIn;
      await p.goto(`${base}${urls[route]}`);
      await hydrated(p);
      const results = await new AxeBuilder({
        page: p as unknown as ConstructorParameters<typeof AxeBuilder>[0]['page'],
      })
        .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'])
        .analyze();
      for (const v of results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')) {
        const where = v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join(' | ');
        const why = v.nodes[0]?.any[0]?.message ?? v.nodes[0]?.failureSummary ?? '';
        found.push(`${route} (${urls[route]}): ${v.id} [${v.impact}] ${v.help} — ${where} — ${why}`);
      }
    }
    await anonymous.close();
    return found;
  }

  it('has no serious or critical axe-core violation on any page', async () => {
    const found = await axeViolations(page, { viewport: { width: 1280, height: 900 } });
    assert.deepEqual(found, [], `axe-core violations:\n${found.join('\n')}`);
  });

  it('has none at a phone’s width either, where wide tables scroll and must take the keyboard', async () => {
    const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
    const signedIn = await newPage(phone);
    await signIn(signedIn);
    const found = await axeViolations(signedIn, phone);
    await signedIn.close();
    assert.deepEqual(found, [], `axe-core violations at 390 px:\n${found.join('\n')}`);
  });

  it('offers "Skip to content" as the first stop of the keyboard, and it moves to the page', async () => {
    await page.goto(`${base}${urls['/runs']}`);
    await hydrated(page);
    await page.evaluate('document.activeElement?.blur()');
    await (page as unknown as { keyboard: { press(k: string): Promise<void> } }).keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent?.trim()'), 'Skip to content');
    await (page as unknown as { keyboard: { press(k: string): Promise<void> } }).keyboard.press('Enter');
    assert.equal(await page.evaluate('document.activeElement?.id'), 'main');
  });

  it('at 390 px: the navigation folds behind Menu, and run details fit the screen', async () => {
    const phone = await newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    phone.on('pageerror', (e) => problems.push(e.message));
    await signIn(phone);
    await phone.goto(`${base}${urls['/runs/[id]']}`);
    await hydrated(phone);

    const overflow = async (p: Page) =>
      (await p.evaluate(
        `(() => { const m = document.querySelector('main'); return { main: m.scrollWidth - m.clientWidth, page: document.documentElement.scrollWidth - window.innerWidth, navShown: !!document.querySelector('nav.nav')?.offsetParent, mainLeft: m.getBoundingClientRect().left }; })()`,
      )) as { main: number; page: number; navShown: boolean; mainLeft: number };
    /** The innermost elements that stick out of main (outside any scrolling box of their own), to say what to fix. */
    const widest = async (p: Page) =>
      p.evaluate(`(() => {
        const m = document.querySelector('main');
        const edge = m.getBoundingClientRect().left + m.clientWidth + 1;
        const scrolls = (e) => { for (let a = e.parentElement; a && a !== m; a = a.parentElement) if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) return true; return false; };
        const out = [...m.querySelectorAll('*')].filter((e) => e.getBoundingClientRect().right > edge && !scrolls(e) && ![...e.children].some((c) => c.getBoundingClientRect().right > edge));
        return out.slice(0, 5).map((e) => e.tagName.toLowerCase() + [...e.classList].map((c) => '.' + c).join('')).join(', ');
      })()`);
    const run = await overflow(phone);
    assert.equal(run.navShown, false, 'the navigation is folded away');
    assert.ok(run.mainLeft < 1, 'the page starts at the left edge, no sidebar beside it');
    assert.ok(
      run.main <= 0 && run.page <= 0,
      `nothing is cut off: ${JSON.stringify(run)}; sticking out: ${await widest(phone)}`,
    );
    // The items table's columns each keep their own room at this width (the output once had none, its header
    // drawn over the error's).
    const columns = (await phone.evaluate(
      `[...document.querySelectorAll('[role="table"][aria-label="Items"] [role="columnheader"]')].map((c) => { const r = c.getBoundingClientRect(); return { name: c.textContent.trim(), left: r.left, right: r.right }; })`,
    )) as { name: string; left: number; right: number }[];
    assert.deepEqual(
      columns.map((c) => c.name),
      ['#', 'Status', 'Output', 'Error'],
    );
    for (let i = 1; i < columns.length; i++)
      assert.ok(columns[i - 1].right <= columns[i].left, `${columns[i - 1].name} does not run into ${columns[i].name}`);
    const output = columns.find((c) => c.name === 'Output')!;
    assert.ok(output.right - output.left >= 60, `the output column has room: ${JSON.stringify(columns)}`);
    assert.match(await phone.innerText('main'), /Pay 18250 to Globex Corporation International\?/);
    assert.ok(await phone.$('button:has-text("Approve")'), 'an approval can be decided from the phone');
    // The log's messages take the width of the screen under their time, level and node, not a sliver beside them.
    const messages = (await phone.evaluate(
      `[...document.querySelectorAll('.log .log-message')].map((m) => m.getBoundingClientRect().width)`,
    )) as number[];
    assert.ok(messages.length > 0, 'the run has a log');
    assert.ok(Math.min(...messages) >= 250, `log messages have room to be read: ${messages.join(', ')} px`);
    await shot(phone, 'phone-run-details');

    await phone.click('button:has-text("Menu")');
    await phone.waitForSelector('nav.nav a:has-text("Approvals")');
    await shot(phone, 'phone-menu-open');
    await phone.click('nav.nav a:has-text("Approvals")');
    await phone.waitForURL(/\/approvals$/);
    assert.equal((await overflow(phone)).navShown, false, 'following a link folds the menu again');

    // The other pages a person reaches from a phone fit too.
    const wide: string[] = [];
    for (const route of [
      '/approvals',
      '/reviews',
      '/runs',
      '/dashboard',
      '/agents',
      '/agents/[id]',
      '/settings',
      '/chat',
    ]) {
      await phone.goto(`${base}${urls[route]}`);
      const o = await overflow(phone);
      if (o.main > 0 || o.page > 0) wide.push(`${route}: ${JSON.stringify(o)} ${await widest(phone)}`);
    }
    await shot(phone, 'phone-settings');

    // Chat with no model (none is configured here): a fact about the installation, not an error of the person's,
    // and no "start a conversation" beside a button that cannot.
    await phone.goto(`${base}/chat`);
    const chat = await phone.innerText('main');
    assert.match(chat, /Chat needs an AI model, and none is set up\.\s+Whoever runs Cadre can add one/);
    assert.doesNotMatch(chat, /Start a new conversation/);
    assert.equal(await phone.$('main [role="alert"]'), null, 'not shown as an error');
    assert.ok(await phone.$('main button:has-text("New conversation")[disabled]'));
    await shot(phone, 'phone-chat-no-model');
    await phone.close();
    assert.deepEqual(wide, []);
    assert.deepEqual(problems, []);
  });
});
