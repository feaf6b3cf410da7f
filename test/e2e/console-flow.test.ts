// The console in a real browser against the real stack (Temporal dev server, embedded Postgres, a worker, the
// API with the built console mounted as the web process mounts it): a person creates an agent, edits it, tests
// it, puts it live, runs it, approves, downloads the result, cancels a run, and opens Run Mode. Screenshots of
// every main page go to test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http, { type Server } from 'node:http';
import path from 'node:path';
import { createApp } from '../../api/app';
import { apiAdapters } from '../../scripts/api-adapters';
import { createLogger } from '../../api/logger';
import { createInvitation } from '../../db/invitations';
import { configureWorkspaceSso, startOidcProvider } from '../support/oidc-provider';
import { memberWithRole } from '../support/people';
import { iou, textPdf } from '../support/source-samples';
import { secretBox } from '../../db/secret-box';
import { buildConsole, consoleHandler } from '../support/console-build';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';

const repoDir = path.join(__dirname, '..', '..');
const chromiumPath = '/usr/bin/chromium';
const shots = path.join(repoDir, 'test-output', 'screenshots');

/** The little of playwright-core this suite uses, so it type-checks whether or not the package is installed. */
interface Page {
  $$(selector: string): Promise<unknown[]>;
  evaluate(script: string): Promise<unknown>;
  $(selector: string): Promise<{ textContent(): Promise<string | null> } | null>;
  goto(url: string): Promise<unknown>;
  click(selector: string): Promise<void>;
  fill(selector: string, value: string): Promise<void>;
  check(selector: string): Promise<void>;
  selectOption(selector: string, value: string): Promise<unknown>;
  waitForURL(url: string | RegExp): Promise<void>;
  waitForSelector(selector: string, options?: { timeout?: number }): Promise<unknown>;
  waitForFunction(script: string): Promise<unknown>;
  innerText(selector: string): Promise<string>;
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
  url(): string;
  setInputFiles(selector: string, files: { name: string; mimeType: string; buffer: Buffer }[]): Promise<void>;
  on(event: 'dialog', listener: (dialog: { accept(): Promise<void> }) => void): void;
  on(event: 'pageerror', listener: (error: Error) => void): void;
  waitForEvent(event: 'download'): Promise<{ suggestedFilename(): string; path(): Promise<string | null> }>;
}
interface Browser {
  newPage(options?: object): Promise<Page>;
  close(): Promise<void>;
}

describe('console flow in a browser against the real stack', function () {
  this.timeout(300_000);
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let ownerLink: () => Promise<string>;
  let workspaceId = '';
  let workspaceKey = '';
  const problems: string[] = [];

  before(async function () {
    let playwright: { chromium: { launch(o: object): Promise<Browser> } } | undefined;
    try {
      playwright = await import('playwright-core' as string);
    } catch {
      playwright = undefined;
    }
    if (!playwright || !fs.existsSync(chromiumPath)) {
      console.log(`    (skipped: needs playwright-core and ${chromiumPath})`);
      this.skip();
    }
    buildConsole(); // once per test process, shared by the browser suites

    h = await createHarness();
    const { workspace, key } = await createTestWorkspace(h);
    workspaceKey = key;
    // The person who starts Cadre gets a one-time owner link (scripts/start.ts prints it); they join with it.
    workspaceId = workspace.id;
    ownerLink = async () =>
      (await createInvitation(h.stack.knex, { workspaceId: workspace.id, role: 'owner', publicUrl: base })).url;
    // As scripts/web.ts does: one server for the API and the console, which reads through the API.
    server = await new Promise<Server>((resolve) => {
      // The console needs the server's address before it loads, so the handler is attached after listen.
      const s = http.createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    delete process.env.CADRE_CONSOLE_API_KEY; // people sign in: no console key
    server.removeAllListeners('request');
    server.on(
      'request',
      createApp({
        adapters: apiAdapters(),
        knex: h.stack.knex,
        temporal: h.client,
        temporalConfig: h.temporalConfig,
        links: { publicUrl: base, temporal: h.temporalConfig },
        bodyLimit: '1mb',
        budgetScope: `${randomUUID()}:`, // this suite's own request budgets (sign-in throttles), as a deployment's
        secrets: secretBox('console flow'),
        logger: createLogger('silent', 'web'),
        versions: { temporal: 'test', postgres: 'test' },
        ready: async () => ({ temporal: true, postgres: true }),
        console: await consoleHandler(base),
      }),
    );

    fs.mkdirSync(shots, { recursive: true });
    browser = await playwright!.chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page.on('dialog', (d) => void d.accept()); // "Cancel this run?" → yes
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  // What a person reads (innerText leaves out the page's scripts and hidden parts).
  const text = async (selector = 'main') => page.innerText(selector);
  const agentId = () => /\/agents\/([0-9a-f-]{36})/.exec(page.url())![1];

  /** Replaces a node through the editor's Advanced (JSON) view of it. */
  async function setNode(id: string, node: object) {
    const open = await page.$('label[for="e-node"]');
    if (!open || (await open.textContent()) !== `Node ${id}`) await page.click(`.svelte-flow__node[data-id="${id}"]`);
    // The Advanced view, opened once, stays open from node to node.
    if (!(await page.$('details.advanced[open]'))) await page.click('summary:has-text("Advanced: this node as JSON")');
    await page.waitForSelector('#e-node');
    await page.fill('#e-node', JSON.stringify(node, null, 2));
  }

  /** Approves `count` pending approvals on the run page, one after the other, as a reviewer would. */
  async function approve(count: number) {
    const runUrl = page.url();
    for (let i = 0; i < count; i++) {
      await page.waitForSelector('button:has-text("Approve")');
      await page.click('button:has-text("Approve")');
      await page.waitForSelector('.notice');
      await page.goto(runUrl);
    }
  }

  async function waitForText(pattern: RegExp, selector = 'main') {
    const deadline = Date.now() + 60_000;
    while (!pattern.test(await text(selector))) {
      if (Date.now() > deadline)
        throw new Error(`the page never showed ${pattern}: ${(await text(selector)).slice(0, 500)}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  it('signs in: an unsigned visit goes to sign-in; the owner link creates the account; sign out and in again', async () => {
    await page.goto(`${base}/runs?status=failed`);
    await page.waitForURL(/\/login\?next=/);
    await page.goto(await ownerLink());
    assert.match(await text('body'), /Join “.*”.*You are invited as owner/s);
    await page.fill('#name', 'Olive Owner');
    await page.fill('#email', 'olive@example.test');
    await page.fill('#password', 'olive password 1');
    await page.click('button:has-text("Join")');
    await page.waitForURL(/\/agents$/);
    assert.match(await text('.whoami'), /olive@example\.test · owner/);

    await page.click('.whoami button:has-text("Sign out")');
    await page.waitForURL(/\/login$/);
    await page.goto(`${base}/runs?status=failed`);
    await page.waitForURL(/\/login\?next=/);
    await page.fill('#email', 'olive@example.test');
    await page.fill('#password', 'wrong password!');
    await page.click('button:has-text("Sign in")');
    await page.waitForSelector('.notice-error');
    assert.match(await text('body'), /do not match an account/);
    await page.fill('#password', 'olive password 1');
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/runs\?status=failed$/);
    await shot('signed-in');

    // An invitation made in Settings lets a second person in, as the role chosen there.
    await page.goto(`${base}/settings`);
    await page.selectOption('#inv-role', 'viewer');
    await page.click('button:has-text("Invite")');
    const invite = (await text('.invite-url')).trim();
    assert.match(invite, /\/invite\//);
    assert.ok(await page.$('.invite-link button:has-text("Copy link")'), 'the link shown once can be copied');
    await shot('settings');
  });

  it('create → edit → test run → live → run → approve → download; cancel; Run Mode', async () => {
    await page.goto(`${base}/agents`);
    await shot('agents-empty');
    await page.fill('#a-name', 'Expense approver');
    await page.fill('#a-description', 'A person approves each expense line; the rest becomes a CSV.');
    await page.click('button:has-text("Create and edit")');
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}\/edit$/);
    const id = agentId();

    await page.fill('#e-instructions', 'Approve each expense line, then collect it in a report.');
    await page.click('.palette button[data-kind="approval"]');
    await setNode('approval-1', { kind: 'approval', id: 'approval-1', message: 'Pay this expense?', next: 'output' });
    await setNode('input', { kind: 'input', id: 'input', format: 'csv', next: 'approval-1' });
    await page.check('text=Public run page allowed');
    await shot('agent-editor');
    await page.click('button:has-text("Save version 2")');
    await page.waitForURL(new RegExp(`/agents/${id}\\?saved=2$`));
    assert.match(await text(), /Saved as version 2/);
    assert.match(await text(), /Approve each expense line/);

    // A test run, approved, lets the draft become ready, then live.
    await page.fill('#run-input', 'item,amount\nTaxi,23');
    await page.click('.run-form button');
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await waitForText(/Pay this expense\?/);
    await approve(1);
    await waitForText(/Completed/);
    await page.goto(`${base}/agents/${id}`);
    await page.click('button:has-text("Mark ready")');
    await page.waitForSelector('button:has-text("Go live")');
    await page.click('button:has-text("Go live")');
    await page.waitForSelector('button:has-text("Pause")');
    await shot('agent');

    // A real run, its CSV taken from a file on the person's computer (a spreadsheet's export, CRLF and all):
    // the box says what the agent reads and shows the file before it runs. The progress bar moves as a person approves.
    assert.match(await text('#run-input-help'), /CSV, its first line naming the columns/);
    await page.setInputFiles('#run-file', [
      {
        name: 'expenses.csv',
        mimeType: 'text/csv',
        buffer: Buffer.from('item,amount\r\nHotel,180\r\nTrain,64\r\nLunch,18\r\n'),
      },
    ]);
    await page.waitForFunction(
      `document.querySelector('#run-input').value === 'item,amount\\nHotel,180\\nTrain,64\\nLunch,18\\n'`,
    );
    await page.click('.run-form button');
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const runUrl = page.url();
    await waitForText(/0 of 3 items finished/);
    await shot('run-waiting');
    await page.click('button:has-text("Approve")');
    await waitForText(/1 of 3 items finished/);
    await page.goto(`${base}/approvals`);
    assert.match(await text(), /Pay this expense\?/);
    await shot('approvals');
    await page.goto(runUrl);
    await approve(2);
    await waitForText(/3 of 3 items finished/);
    await waitForText(/Completed/);
    await shot('run-completed');
    const download = page.waitForEvent('download');
    await page.click('a:has-text("results.csv")');
    const file = await download;
    assert.equal(file.suggestedFilename(), 'results.csv');
    assert.equal(fs.readFileSync((await file.path())!, 'utf8'), 'item,amount\nHotel,180\nTrain,64\nLunch,18\n');

    // Cancel a run while it waits.
    await page.goto(`${base}/agents/${id}`);
    await page.fill('#run-input', 'item,amount\nDinner,95');
    await page.click('.run-form button');
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await waitForText(/Pay this expense\?/);
    await page.click('button:has-text("Cancel run")');
    await waitForText(/Cancelled/);
    await shot('run-cancelled');
    // The runs list counts items in words, the one not run apart: no "1 / 0 / 0 of 1" to decode.
    await page.goto(`${base}/runs?status=cancelled`);
    assert.match(await text('table'), /Cancelled\s+Expense approver v2\s+Manual\s+0 of 1 done, 1 not run/);

    // Run Mode: a public link, no edit rights from there.
    await page.goto(`${base}/agents/${id}`);
    await page.click('button:has-text("New link")');
    await waitForText(/Run Mode link \(copy it now, it is shown once\): http/);
    const link = /(http:\/\/\S+\/r\/[A-Za-z0-9_-]{43})/.exec(await text())![1];
    const token = link.split('/r/')[1];
    await page.goto(link);
    assert.match(await text('body'), /Expense approver/);
    assert.doesNotMatch(await text('body'), /Dashboard|Approvals|Agents/, 'nothing of the workspace around it');
    await shot('run-mode');
    for (const route of [`/r/${token}/edit`, `/r/${token}/agents`]) {
      assert.equal((await fetch(`${base}${route}`)).status, 404, route);
    }
    for (const [method, route] of [
      ['PUT', `/v1/agents/${id}`],
      ['POST', `/v1/agents/${id}/state`],
      ['GET', `/v1/agents/${id}/export`],
    ]) {
      const res = await fetch(`${base}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: method === 'GET' ? undefined : '{}',
      });
      assert.ok([401, 403, 404].includes(res.status), `${method} ${route} with the Run Mode token: ${res.status}`);
    }
    await page.fill('#rm-input', 'item,amount\nBus,3');
    await page.click('button:has-text("Run")');
    await page.waitForURL(/\/r\/[A-Za-z0-9_-]{43}\/runs\/[0-9a-f-]{36}$/);
    await waitForText(/0 of 1 items finished|Needs review/, 'body');

    // The other main pages, for the screenshots.
    for (const [name, url] of [
      ['runs', '/runs'],
      ['dashboard', '/dashboard'],
      ['versions', `/agents/${id}/versions`],
      ['agents', '/agents'],
    ]) {
      await page.goto(`${base}${url}`);
      await shot(name);
    }
    assert.deepEqual(problems, [], 'no script errors on any page');
  });

  it('keeps the items table of a 10,000-item run to the rows in view, and reaches the last item by scrolling', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Ten thousand',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'mark' },
        { kind: 'transform', id: 'mark', set: { seen: true }, next: null },
      ],
    });
    const input = JSON.stringify(Array.from({ length: 10_000 }, (_, n) => ({ n })));
    const run = await startTestRun(h, workspaceId, agent.id, input);
    await waitForRun(h, run.id, undefined, 120_000);

    await page.goto(`${base}/runs/${run.id}`);
    await page.waitForSelector('[role="table"] [role="row"][aria-rowindex="1"]');
    const rendered = await page.$$('[role="table"] [role="row"][aria-rowindex]');
    assert.ok(rendered.length < 60, `only the rows in view are in the page (${rendered.length})`);
    // Scrolled in the page itself (this file is compiled without the DOM's types).
    await page.evaluate(
      "(() => { const v = document.querySelector('.viewport'); v.scrollTop = v.scrollHeight; v.dispatchEvent(new Event('scroll')); })()",
    );
    // Items are numbered from 1 for people: the last of 10,000 is item 10000 (its seq is 9999).
    // Its number shows while the row still loads; a click then has no item to open, so wait for its status.
    await page.waitForSelector('[role="row"][aria-rowindex="10000"]:has-text("10000"):has-text("Done")');
    await page.click('[role="row"][aria-rowindex="10000"]');
    await waitForText(/Item 10000/);
    // Its data as named values, not JSON.
    assert.match(await text('.inspect'), /\bn\s+9999\b/);
    assert.doesNotMatch(await text('.inspect'), /"n":/);
    await shot('run-10000-items');
    assert.deepEqual(problems, []);
  });

  it('reviews flagged items: the run page links to the Review tab, where a person accepts one and rejects another', async () => {
    const spec = JSON.parse(fs.readFileSync(path.join(repoDir, 'examples/route-csv-rows.json'), 'utf8'));
    const agent = await createLiveAgent(h, workspaceId, spec);
    const input = 'invoice,vendor,amount\nINV-1,Acme,120\nINV-2,Globex,18250\nINV-3,Initech,25000';
    const run = await startTestRun(h, workspaceId, agent.id, input);
    await waitForRun(h, run.id, (r) => Number(r.needs_review) === 2);

    await page.goto(`${base}/runs/${run.id}`);
    await waitForText(/2 waiting for a person/);
    assert.doesNotMatch(await text(), /left$/m, 'no time left is promised for items waiting on people');
    // The run says where its flagged items are decided, without opening an item first.
    assert.match(await text('[data-testid="flagged"]'), /2 items were flagged for review and wait for a person/);
    assert.ok(await page.$(`[data-testid="flagged"] a[href="/reviews?run_id=${run.id}"]:has-text("Review them")`));
    await page.click('[role="row"][aria-rowindex="2"]');
    await page.click('a:has-text("Review this item")');
    await page.waitForURL(new RegExp(`/reviews\\?run_id=${run.id}$`));
    await waitForText(/invoice INV-2 from Globex is over 10,000/);
    assert.match(await text(), /invoice INV-3 from Initech is over 10,000/);
    await shot('review-queue');

    await page.click('li.review:has-text("INV-2") button:has-text("Accept")');
    await waitForText(/Accepted\./);
    await page.check('li.review:has-text("INV-3") input[value="reject"]');
    await page.fill('li.review:has-text("INV-3") input[name="reason"]', 'not ours');
    await page.click('li.review:has-text("INV-3") button:has-text("Reject")');
    await waitForText(/Rejected: the item fails with your reason/);
    const ended = await waitForRun(h, run.id);
    assert.equal(ended.status, 'completed');
    const items = await h.stack.knex('run_items').where({ run_id: run.id }).orderBy('seq').select('status', 'error');
    assert.deepEqual(
      items.map((i) => i.status),
      ['done', 'done', 'failed'],
    );
    assert.match(items[2].error, /not ours/);
    const decided = await h.stack.knex('item_reviews').where({ run_id: run.id }).orderBy('item_seq');
    assert.ok(
      decided.every((r) => r.decided_by && r.decided_at),
      'who and when are recorded',
    );
    await page.goto(`${base}/reviews?run_id=${run.id}`);
    await waitForText(/Nothing is waiting for review/);
    assert.deepEqual(problems, []);
  });

  it('two reviewers decide the same approval and the same flagged item at once: one counts, the other is told whose', async () => {
    /** A signed-in operator in a browser of their own. */
    const reviewer = async () => {
      const who = await memberWithRole(h.stack.knex, base, workspaceId, 'operator');
      const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      p.on('pageerror', (e) => problems.push(e.message));
      await p.goto(`${base}/login`);
      await p.waitForSelector('html[data-hydrated]');
      await p.fill('#email', who.email);
      await p.fill('#password', who.password);
      await p.click('button:has-text("Sign in")');
      await p.waitForURL(/\/dashboard$/);
      return { p, email: who.email };
    };
    const [ann, bob] = [await reviewer(), await reviewer()];
    const until = async (p: Page, pattern: RegExp) => {
      const deadline = Date.now() + 60_000;
      while (!pattern.test(await p.innerText('main'))) {
        if (Date.now() > deadline)
          throw new Error(`never showed ${pattern}: ${(await p.innerText('main')).slice(0, 500)}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

    // The same approval: Ann approves while Bob rejects.
    const gated = await createLiveAgent(h, workspaceId, {
      name: 'Two reviewers, one approval',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'gate' },
        { kind: 'approval', id: 'gate', message: 'Pay {{amount}} to {{payee}}?' },
      ],
    });
    const run = await startTestRun(h, workspaceId, gated.id, JSON.stringify([{ payee: 'Umbrella', amount: 7000 }]));
    await waitForRun(h, run.id, (r) => r.status === 'needs_review');
    for (const { p } of [ann, bob]) {
      await p.goto(`${base}/runs/${run.id}`);
      await p.waitForSelector('html[data-hydrated]');
      await p.waitForSelector('button:has-text("Approve")');
    }
    await Promise.all([ann.p.click('button:has-text("Approve")'), bob.p.click('button:has-text("Reject")')]);
    // Both have their answer once each page shows its notice.
    for (const { p } of [ann, bob]) await p.waitForSelector('.notice-ok, .notice-error');
    const decided = await h.stack.knex('approvals').where({ run_id: run.id }).first('status', 'decided_by');
    const winner = decided.decided_by === ann.email ? ann : bob;
    const loser = winner === ann ? bob : ann;
    assert.equal(decided.status, winner === ann ? 'approved' : 'rejected');
    await until(winner.p, winner === ann ? /Approved: the run continues\./ : /Rejected\./);
    // The one who lost reads what was decided and by whom, and the page shows that decision, not the form.
    await until(
      loser.p,
      new RegExp(
        `Your decision was not applied: this approval is already ${decided.status} by ${escape(winner.email)}\\.`,
      ),
    );
    await until(loser.p, new RegExp(`Decided by ${escape(winner.email)}`));
    assert.equal(await loser.p.$('button:has-text("Approve")'), null, 'no form left to send');
    assert.doesNotMatch(await loser.p.innerText('main'), /409|approval_decided|Conflict/);
    await loser.p.screenshot({ path: path.join(shots, 'two-reviewers-approval.png'), fullPage: true });

    // The same flagged item: Ann accepts while Bob rejects it with a reason.
    const spec = JSON.parse(fs.readFileSync(path.join(repoDir, 'examples/route-csv-rows.json'), 'utf8'));
    const flagging = await createLiveAgent(h, workspaceId, { ...spec, name: 'Two reviewers, one item' });
    const flagged = await startTestRun(h, workspaceId, flagging.id, 'invoice,vendor,amount\nINV-8,Globex,28250');
    await waitForRun(h, flagged.id, (r) => Number(r.needs_review) === 1);
    for (const { p } of [ann, bob]) {
      await p.goto(`${base}/reviews?run_id=${flagged.id}`);
      await p.waitForSelector('html[data-hydrated]');
      await p.waitForSelector('li.review');
    }
    // Both accept it with an edit of their own, typed in the card's fields.
    for (const [{ p }, vendor] of [
      [ann, 'Globex (Ann)'],
      [bob, 'Globex (Bob)'],
    ] as const) {
      await p.check('li.review input[value="edit"]');
      await p.fill('li.review .editor .field:has(label:text-is("vendor")) input', vendor);
    }
    await Promise.all([
      ann.p.click('li.review button:has-text("Accept with these edits")'),
      bob.p.click('li.review button:has-text("Accept with these edits")'),
    ]);
    for (const { p } of [ann, bob]) await p.waitForSelector('.notice-ok, .notice-error');
    const review = await h.stack.knex('item_reviews').where({ run_id: flagged.id }).first('status', 'decided_by');
    const first = review.decided_by === ann.email ? ann : bob;
    const second = first === ann ? bob : ann;
    assert.equal(review.status, 'accepted');
    await until(first.p, /Accepted with your output\./);
    await until(
      second.p,
      new RegExp(
        `Item 1 — your decision was not applied: this item was already ${review.status} by ${escape(first.email)}\\.`,
      ),
    );
    await until(second.p, /Nothing is waiting for review/);
    await second.p.screenshot({ path: path.join(shots, 'two-reviewers-review.png'), fullPage: true });
    assert.equal((await waitForRun(h, flagged.id)).status, 'completed');
    // The edit that counted is the winner's alone: the other's never reached the item.
    const [item] = await h.stack.knex('run_items').where({ run_id: flagged.id }).select('output', 'data');
    const edited = item.output ?? item.data;
    assert.equal(edited.vendor, first === ann ? 'Globex (Ann)' : 'Globex (Bob)');
    assert.equal(edited.amount, 28250, 'the fields not edited keep their kind');
    assert.deepEqual(problems, []);
  });

  it('uploads a source, then opens a run item’s cited passage with its lines highlighted over the page', async () => {
    const pdf = await textPdf([
      [['Our office dog is called Biscuit.', 'He loves tennis balls.'], ['The cat ignores everyone.']],
    ]);
    await page.goto(`${base}/sources`);
    await page.setInputFiles('#s-files', [
      { name: 'pets.pdf', mimeType: 'application/pdf', buffer: Buffer.from(pdf.bytes) },
    ]);
    await page.fill('#s-name', 'Pet handbook');
    await page.click('button:has-text("Upload")');
    await waitForText(/“Pet handbook” added/);
    // the list follows the indexing until the version is ready
    await page.waitForSelector('tr[data-source="Pet handbook"] .badge:has-text("Ready")', { timeout: 120_000 });
    assert.match(await text('tr[data-source="Pet handbook"]'), /pets\.pdf\s+Ready\s+1 \/ 1 pages\s+v1\s+2/);
    await shot('sources');

    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Pet questions',
      sources: ['Pet handbook'],
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'look' },
        { kind: 'retrieve', id: 'look', query: '{{question}}', top_k: 2 },
      ],
    });
    const run = await startTestRun(h, workspaceId, agent.id, JSON.stringify([{ question: 'dog tennis balls' }]));
    assert.equal((await waitForRun(h, run.id)).status, 'completed');

    await page.goto(`${base}/runs/${run.id}`);
    await page.click('[role="row"][aria-rowindex="1"]');
    await page.waitForSelector('a.passage-link');
    assert.match(
      await text('.source-context'),
      /look searched for “dog tennis balls”.*Pet handbook v1, page 1, paragraph 1/s,
    );
    await page.click('a.passage-link');
    await page.waitForURL(/\/citations\/\d+\?run=/);
    assert.match(
      await text(),
      /Source\s+Pet handbook\s+Version\s+v1\s+Document\s+pets\.pdf\s+Page\s+1\s+Paragraph\s+1/i,
    );
    const loaded =
      "(() => { const i = document.querySelector('img.page-picture'); return !!i && i.complete && i.naturalWidth > 0; })()";
    for (let tries = 0; !(await page.evaluate(loaded)); tries++) {
      assert.ok(tries < 200, 'the page picture loads');
      await new Promise((r) => setTimeout(r, 100));
    }
    type Rect = { x: number; y: number; width: number; height: number };
    const [img, ...lines] = (await page.evaluate(
      "[...document.querySelectorAll('img.page-picture, .highlight')].map((e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; })",
    )) as Rect[];
    assert.equal(lines.length, 2, 'one box per line of the paragraph');
    // Back to page units (points) from the picture's size on screen: the highlight covers the text drawn there.
    const passageId = /\/citations\/(\d+)/.exec(page.url())![1];
    const citation = (await (
      await fetch(`${base}/v1/passages/${passageId}`, { headers: { authorization: `Bearer ${workspaceKey}` } })
    ).json()) as { page_size: { width: number } };
    const k = img.width / citation.page_size.width;
    const x0 = Math.min(...lines.map((l) => l.x));
    const y0 = Math.min(...lines.map((l) => l.y));
    const onPage = {
      x: (x0 - img.x) / k,
      y: (y0 - img.y) / k,
      width: (Math.max(...lines.map((l) => l.x + l.width)) - x0) / k,
      height: (Math.max(...lines.map((l) => l.y + l.height)) - y0) / k,
    };
    const overlap = iou(onPage, pdf.boxes[0][0]);
    assert.ok(overlap >= 0.5, `the highlight lies over the cited lines (IoU ${overlap.toFixed(2)})`);
    await shot('citation');
    assert.deepEqual(problems, []);
  });

  it('opens a form trigger’s public page for someone who is not signed in, and takes their submission', async () => {
    const api = (route: string, body: unknown) =>
      fetch(`${base}/v1${route}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${workspaceKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<{ id: string }>);
    const agent = await api('/agents', { name: 'Intake', nodes: [{ kind: 'input', id: 'in', next: null }] });
    const form = await api(`/agents/${agent.id}/triggers`, {
      kind: 'form',
      title: 'Visitor intake',
      fields: [{ name: 'email', label: 'Email', type: 'email', required: true }],
    });
    // No cookie: the page must not send the visitor to sign in.
    const opened = await fetch(`${base}/forms/${form.id}`, { redirect: 'manual' });
    assert.equal(opened.status, 200);
    assert.match(await opened.text(), /Visitor intake/);
    // The agent is a draft, so the API refuses the submission (409), and the visitor reads why.
    const sent = await fetch(`${base}/forms/${form.id}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: 'ana@example.com' }),
    });
    assert.match(await sent.text(), /the agent is draft; it takes form submissions only while live/);
  });

  it('signs in with single sign-on through a real OpenID Connect provider, joining with the default role', async () => {
    const idp = await startOidcProvider(`${base}/v1/auth/sso/callback`);
    try {
      await configureWorkspaceSso(base, workspaceKey, idp, 'sso.test');

      await page.goto(`${base}/dashboard`);
      if (await page.$('.whoami')) {
        await page.click('.whoami button:has-text("Sign out")');
        await page.waitForURL(/\/login$/);
      }
      await page.goto(`${base}/login?next=%2Fapprovals`);
      await page.fill('#sso-email', 'sam@sso.test');
      await page.click('button:has-text("Continue with single sign-on")');
      await page.waitForURL(new RegExp(`^${idp.issuer}/interaction/`));
      await page.fill('input[name="login"]', 'sam@sso.test');
      await page.fill('input[name="password"]', 'anything');
      await page.click('button:has-text("Sign-in")');
      // The provider asks once to share the email with Cadre.
      await page.waitForURL(/\/interaction\/|\/approvals$/);
      if (page.url().includes('/interaction/')) await page.click('button[type="submit"]');
      await page.waitForURL(new RegExp(`^${base}/approvals$`));
      assert.match(await text('.whoami'), /sam@sso\.test · operator/);
      await shot('signed-in-sso');
      assert.equal(
        (await h.stack.knex('users').where({ email: 'sam@sso.test' }).first('password_hash')).password_hash,
        null,
        'an account made by single sign-on has no password',
      );
    } finally {
      await idp.close();
    }
  });
  it('shows a viewer the workspace but none of the controls their role cannot use', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Viewer check',
      nodes: [
        { kind: 'input', id: 'in', format: 'lines', next: 'gate' },
        { kind: 'approval', id: 'gate', message: 'Send {{text}}?' },
      ],
    });
    const run = await startTestRun(h, workspaceId, agent.id, 'hello');
    await waitForRun(h, run.id, (r) => r.status === 'needs_review');
    const flagger = await createLiveAgent(h, workspaceId, {
      name: 'Viewer review check',
      nodes: [
        { kind: 'input', id: 'in', format: 'lines', next: 'flag' },
        { kind: 'flag_for_review', id: 'flag', reason: 'check {{text}}' },
      ],
    });
    const flagged = await startTestRun(h, workspaceId, flagger.id, 'hello');
    await waitForRun(h, flagged.id, (r) => r.status === 'needs_review');

    await page.goto(`${base}/dashboard`);
    if (await page.$('.whoami')) {
      await page.click('.whoami button:has-text("Sign out")');
      await page.waitForURL(/\/login$/);
    }
    const invite = await createInvitation(h.stack.knex, { workspaceId, role: 'viewer', publicUrl: base });
    await page.goto(invite.url);
    await page.fill('#name', 'Vera Viewer');
    await page.fill('#email', 'vera@example.test');
    await page.fill('#password', 'vera password 1');
    await page.click('button:has-text("Join")');
    await page.waitForURL(/\/agents$/);
    assert.match(await text('.whoami'), /vera@example\.test · viewer/);
    assert.match(await text(), /Viewer check/);
    assert.equal(await page.$('summary:has-text("New agent")'), null, 'no New agent');
    assert.equal(await page.$('button:has-text("Duplicate")'), null, 'no Duplicate');

    await page.goto(`${base}/agents/${agent.id}`);
    await waitForText(/Viewer check/);
    assert.equal(await page.$('a:has-text("Edit")'), null, 'no Edit');
    assert.equal(await page.$('#run-input'), null, 'no run form');
    assert.equal(await page.$('button:has-text("Pause")'), null, 'no lifecycle buttons');

    await page.goto(`${base}/runs/${run.id}`);
    await waitForText(/Send hello\?/);
    assert.match(await text(), /Waiting for a reviewer/);
    assert.equal(await page.$('button:has-text("Approve")'), null, 'no Approve');
    assert.equal(await page.$('button:has-text("Cancel run")'), null, 'no Cancel');
    await shot('viewer-run');
    await page.goto(`${base}/reviews?run_id=${flagged.id}`);
    await waitForText(/check hello/);
    assert.match(await text(), /Waiting for a reviewer \(your role can view flagged items, not decide them\)/);
    assert.equal(await page.$('li.review button'), null, 'no Accept, Reject or Send');
    await shot('viewer-review');

    // The same pages for an editor show those controls (the checks above look for the right things).
    await page.click('.whoami button:has-text("Sign out")');
    await page.waitForURL(/\/login$/);
    await page.goto((await createInvitation(h.stack.knex, { workspaceId, role: 'editor', publicUrl: base })).url);
    await page.fill('#name', 'Ed Editor');
    await page.fill('#email', 'ed@example.test');
    await page.fill('#password', 'ed password 12');
    await page.click('button:has-text("Join")');
    await page.waitForURL(/\/agents$/);
    assert.ok(await page.$('summary:has-text("New agent")'));
    await page.goto(`${base}/agents/${agent.id}`);
    await waitForText(/Viewer check/);
    assert.ok(await page.$('a:has-text("Edit")'));
    assert.ok(await page.$('#run-input'));
    await page.goto(`${base}/runs/${run.id}`);
    await waitForText(/Send hello\?/);
    assert.ok(await page.$('button:has-text("Approve")'));
    await page.goto(`${base}/reviews?run_id=${flagged.id}`);
    await waitForText(/check hello/);
    assert.ok(await page.$('li.review button:has-text("Accept")'));

    // An admin makes Ed a viewer while his run page is open (the change Settings' role select makes). His next
    // click is refused in words, and the page then shows what a viewer has: no Approve to try again.
    await page.goto(`${base}/runs/${run.id}`);
    await page.waitForSelector('html[data-hydrated]');
    const ed = await h.stack.knex('users').where({ email: 'ed@example.test' }).first('id');
    await h.stack.knex('memberships').where({ user_id: ed.id, workspace_id: workspaceId }).update({ role: 'viewer' });
    await page.click('button:has-text("Approve")');
    await waitForText(/your role in this workspace \(viewer\) does not allow this/);
    await waitForText(/Waiting for a reviewer \(your role can view approvals, not decide them\)/);
    assert.equal(await page.$('button:has-text("Approve")'), null, 'no Approve left to try again');
    assert.match(await text('.whoami'), /ed@example\.test · viewer/);
    await shot('role-changed-while-open');
    assert.equal((await h.stack.knex('approvals').where({ run_id: run.id }).first('status')).status, 'pending');
    assert.deepEqual(problems, []);
  });
});
