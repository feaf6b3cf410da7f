// Triggers, reviews and run counts in a real browser against the real stack (Temporal dev server, embedded Postgres,
// a worker, the API with the built console mounted as the web process mounts it): a schedule whose CSV input is set
// in the builder fires a run that completes on those rows; the builder keeps what was typed and says what is wrong
// at its fields, before sending what the browser can check; a webhook is set up
// with its filter and batching from the form; the Review page decides items four ways; a cancelled run counts
// what ran apart from what did not. Screenshots go to test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createInvitation } from '../../db/invitations';
import type { Server } from 'node:http';
import { secretBox } from '../../db/secret-box';
import { hydrated, launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  waitForRun,
  type Harness,
} from '../support/harness';

const repoDir = path.join(__dirname, '..', '..');
describe('console triggers, reviews and run counts in a browser against the real stack', function () {
  this.timeout(300_000);
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  let workspaceKey = '';
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    h = await createHarness();
    const { workspace, key } = await createTestWorkspace(h);
    workspaceId = workspace.id;
    workspaceKey = key;
    ({ server, base } = await startWebWithConsole(h, { secrets: secretBox('console triggers') }));
    // A browser in Berlin: the schedule builder's time zone starts as the browser's, not the server's.
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Berlin' });
    page.on('dialog', (d) => void d.accept()); // "Cancel this run?" → yes
    page.on('pageerror', (e) => problems.push(e.message));

    // The owner joins with the one-time link, as the person who starts Cadre does.
    const invite = await createInvitation(h.stack.knex, { workspaceId, role: 'owner', publicUrl: base });
    await page.goto(invite.url);
    await page.fill('#name', 'Tess Triggers');
    await page.fill('#email', 'tess@example.test');
    await page.fill('#password', 'tess password 1');
    await page.click('button:has-text("Join")');
    await page.waitForURL(/\/agents$/);
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  const text = async (selector = 'main') => page.innerText(selector);
  async function waitForText(pattern: RegExp, selector = 'main') {
    const deadline = Date.now() + 60_000;
    while (!pattern.test(await text(selector))) {
      if (Date.now() > deadline)
        throw new Error(`the page never showed ${pattern}: ${(await text(selector)).slice(0, 800)}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }
  const api = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${base}/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${workspaceKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const days = async () => {
    const on: string[] = [];
    for (const d of ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'])
      if (await page.isChecked(`input[name="day_${d}"]`)) on.push(d);
    return on;
  };

  it('a schedule with CSV input set in the builder keeps what was typed, and its Run now links to a run of those rows', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Invoice rows',
      nodes: [
        { kind: 'input', id: 'rows', format: 'csv', next: 'clean' },
        { kind: 'transform', id: 'clean', cast: { amount: 'number' }, next: 'report' },
        { kind: 'output', id: 'report', format: 'json' },
      ],
    });
    await page.goto(`${base}/agents/${agent.id}`);
    await page.click('summary:has-text("Add a schedule")');
    // The browser's zone, once the page runs in it.
    for (let tries = 0; (await page.inputValue('#s-tz')) !== 'Europe/Berlin'; tries++) {
      assert.ok(tries < 100, `the time zone starts as the browser's: ${await page.inputValue('#s-tz')}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    await page.selectOption('#s-type', 'weekly');
    for (const d of ['mon', 'wed', 'fri']) await page.uncheck(`input[name="day_${d}"]`);
    await page.check('input[name="day_sat"]');
    await page.fill('#s-at', '07:45');
    await page.selectOption('#s-input-format', 'csv');
    const csv = 'invoice,vendor,amount\nINV-1,Acme,120.5\nINV-2,Globex,80';
    await page.fill('#s-input', csv);

    const kept = async (when: string) => {
      assert.equal(await page.inputValue('#s-type'), 'weekly', `${when}: repeat`);
      assert.deepEqual(await days(), ['tue', 'thu', 'sat'], `${when}: days`);
      assert.equal(await page.inputValue('#s-at'), '07:45', `${when}: time`);
      assert.equal(await page.inputValue('#s-tz'), 'Europe/Berlin', `${when}: time zone`);
      assert.equal(await page.inputValue('#s-input-format'), 'csv', `${when}: input format`);
      assert.equal(await page.inputValue('#s-input'), csv, `${when}: input`);
    };

    await page.click('button:has-text("Preview")');
    await page.waitForSelector('.preview');
    assert.match(await text('.preview'), /07:45/);
    await kept('after Preview');

    // Input that is not what it says is refused before it is sent, in plain words; nothing is lost.
    await page.selectOption('#s-input-format', 'json');
    await page.click('button:has-text("Add schedule")');
    await waitForText(
      /The input is not valid JSON: it starts with “invoice,vendor,amount” near line 1, column 1 — JSON starts with \[/,
    );
    await page.selectOption('#s-input-format', 'csv');
    await kept('after a refused Add');

    await page.click('button:has-text("Add schedule")');
    await waitForText(/Schedule added/);
    await kept('after Add');
    assert.match(await text(), /Each run's input: CSV, 3 line\(s\)/);
    await shot('schedule-builder-kept');
    const [trigger] = await h.stack.knex('triggers').where({ agent_id: agent.id, kind: 'schedule' });
    assert.equal(trigger.config.input, csv);
    assert.equal(trigger.config.timezone, 'Europe/Berlin');

    // Run now fires the Temporal schedule itself; the card links to the run it started.
    await page.click('li.card:has-text("Schedule") button:has-text("Run now")');
    await page.waitForSelector('.fired a', { timeout: 30_000 });
    await page.click('.fired a');
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const runId = /\/runs\/([0-9a-f-]{36})/.exec(page.url())![1];
    await waitForText(/Completed/);
    await waitForText(/2 of 2 items finished/);
    await shot('scheduled-run');
    const run = await h.stack.knex('runs').where({ id: runId }).first();
    assert.equal(run.trigger, 'schedule');
    assert.equal(run.trigger_id, trigger.id);
    assert.ok(run.fired_at, 'when it fired is the run’s metadata');
    const rows = await items(h, runId);
    assert.deepEqual(
      rows.map((i) => [i.status, i.data.invoice, i.data.amount]),
      [
        ['done', 'INV-1', 120.5],
        ['done', 'INV-2', 80],
      ],
    );
    // Item numbers are people's: CSV row 1 is item 1.
    await page.click('[role="row"][aria-rowindex="1"]');
    await waitForText(/Item 1\b/);
    assert.match(await text('.inspect'), /INV-1/);
    assert.deepEqual(problems, []);
  });

  it('says what is wrong with a schedule in the builder’s words at its fields, before anything is sent', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Schedule slips',
      nodes: [{ kind: 'input', id: 'rows', format: 'csv', next: null }],
    });
    // The builder's Preview and Add as they reach the console: what the browser can check never does.
    let sent = 0;
    const count = (req: { method?: string; url?: string }) => {
      if (req.method === 'POST' && /\?\/(previewSchedule|addSchedule)$/.test(req.url ?? '')) sent++;
    };
    server.on('request', count);
    try {
      await page.goto(`${base}/agents/${agent.id}`);
      await hydrated(page);
      await page.click('summary:has-text("Add a schedule")');
      await page.selectOption('#s-type', 'weekly');
      for (const d of await days()) await page.uncheck(`input[name="day_${d}"]`);
      await page.fill('#s-tz', 'Mars/Olympus');
      await page.click('button:has-text("Preview")');
      await page.waitForSelector('[data-testid="schedule-problems"]');
      const listed = await text('[data-testid="schedule-problems"]');
      assert.match(listed, /Days: choose at least one day/);
      assert.match(listed, /Time zone: is not a time zone .* such as Europe\/Berlin or UTC/);
      // Each at its field, which says it is wrong.
      assert.match(await text('#s-days-problem'), /^Choose at least one day/);
      assert.match(await text('#s-timezone-problem'), /^Is not a time zone/);
      assert.equal(await page.evaluate(`document.querySelector('#s-tz').getAttribute('aria-invalid')`), 'true');
      await page.click('button:has-text("Add schedule")');
      assert.match(await text('[data-testid="schedule-problems"]'), /Days: choose at least one day/);
      assert.equal(sent, 0, 'nothing was sent');
      assert.equal(await page.inputValue('#s-tz'), 'Mars/Olympus', 'what was typed stays');
      await shot('schedule-builder-problems');

      // JSON that is not JSON: what is wrong and where, as a person counts lines; the text stays as typed.
      await page.check('input[name="day_mon"]');
      await page.fill('#s-tz', 'Europe/Berlin');
      await page.selectOption('#s-input-format', 'json');
      const typed = '[\n  {"invoice": "INV-1"}\n  {"invoice": "INV-2"}\n]';
      await page.fill('#s-input', typed);
      await page.click('button:has-text("Add schedule")');
      await waitForText(
        /The input is not valid JSON: something is missing near line 3, column 3 — check for a missing comma, quote or bracket/,
      );
      assert.match(await text('#s-input-problem'), /near line 3, column 3/);
      assert.doesNotMatch(await text('[data-testid="schedule-problems"]'), /Days|Time zone/, 'fixed ones are gone');
      assert.equal(await page.inputValue('#s-input'), typed, 'the input stays as typed');
      assert.equal(sent, 0, 'still nothing sent');

      // What only the server knows comes back at its field: an input the agent's CSV input node cannot read…
      await page.selectOption('#s-input-format', 'text');
      await page.fill('#s-input', 'remind the team');
      await page.click('button:has-text("Add schedule")');
      await waitForText(/Each run's input: the agent's input node \(csv\) cannot read the schedule's input/);
      assert.match(await text('#s-input-problem'), /cannot read the schedule's input/);
      assert.equal(sent, 1);
      assert.equal(await page.inputValue('#s-input'), 'remind the team');
      // … and a cron with five fields that Temporal cannot run.
      await page.selectOption('#s-input-format', 'none');
      await page.selectOption('#s-type', 'cron');
      await page.fill('#s-cron', '61 * * * *');
      await page.click('button:has-text("Preview")');
      await waitForText(/Cron expression: .*"61" in the minute field is out of range/);
      assert.match(await text('#s-expression-problem'), /out of range/);
      assert.equal(await page.inputValue('#s-cron'), '61 * * * *', 'what was typed stays');
      assert.doesNotMatch(await text(), /schedule\.|timezone:|Too small|IANA|position \d|Unexpected token/);
      await shot('schedule-builder-server-problems');
      assert.equal((await h.stack.knex('triggers').where({ agent_id: agent.id })).length, 0, 'nothing added');
      assert.deepEqual(problems, []);
    } finally {
      server.off('request', count);
    }
  });

  it('a run’s JSON input that is not JSON is refused in plain words, and kept as typed', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'JSON rows',
      nodes: [{ kind: 'input', id: 'rows', format: 'json', next: null }],
    });
    await page.goto(`${base}/agents/${agent.id}`);
    await hydrated(page);
    const typed = '{"invoice": "INV-1",\n "amount": 12,}';
    await page.fill('#run-input', typed);
    await page.click('.run-form button');
    await waitForText(
      /The input is not valid JSON: there is a comma with nothing after it near line 2, column 15 — remove the comma/,
    );
    assert.equal(await page.inputValue('#run-input'), typed);
    assert.equal((await h.stack.knex('runs').where({ agent_id: agent.id })).length, 0, 'no run started');
    assert.deepEqual(problems, []);
  });

  it('adds a webhook with a filter and micro-batching from the form; its secret is a step to copy, with its URL', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Hook target',
      nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }],
    });
    await page.goto(`${base}/agents/${agent.id}`);
    // No connection has events yet: the section still says what it is and what it needs.
    await page.click('summary:has-text("When something happens in a connected system")');
    await waitForText(/needs a connection that has events/);
    assert.match(await text(), /Connect one in Integrations/);

    await page.click('summary:has-text("Add a webhook")');
    await page.fill('#w-field', 'type');
    await page.selectOption('#w-op', 'equals');
    await page.fill('#w-value', 'invoice.paid');
    await page.check('input[name="batch"]');
    await page.fill('#w-wait', '30');
    await page.fill('#w-items', '50');
    await page.click('button:has-text("Add webhook")');
    await waitForText(/Webhook added/);
    const [hook] = await h.stack.knex('triggers').where({ agent_id: agent.id, kind: 'webhook' });
    assert.deepEqual(hook.config.filter, { field: 'type', op: 'equals', value: 'invoice.paid' });
    assert.deepEqual(hook.config.batch, { max_wait_ms: 30_000, max_items: 50 });

    const secret = (await text('[data-testid="webhook-secret"]')).trim();
    assert.match(secret, /^whsec_/);
    assert.ok(await page.$('.secret button:has-text("Copy")'), 'the secret has a Copy button');
    assert.ok(await page.$('li.card:has-text("Webhook") button:has-text("Copy URL")'), 'the URL has one');
    await shot('webhook-secret');
    await page.click('button:has-text("I have copied it")');
    await page.waitForSelector('[data-testid="webhook-secret"]', { state: 'detached' });
    assert.doesNotMatch(await text(), new RegExp(secret), 'the secret is gone once copied');
    assert.deepEqual(problems, []);
  });

  it('the agent’s Activity shows a run started through the API that waits for review', async () => {
    const spec = JSON.parse(fs.readFileSync(path.join(repoDir, 'examples/route-csv-rows.json'), 'utf8'));
    const agent = await createLiveAgent(h, workspaceId, spec);
    const started = await api('POST', `/agents/${agent.id}/run`, {
      input: 'invoice,vendor,amount\nINV-1,Acme,120\nINV-2,Globex,18250',
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    await waitForRun(h, String(started.body.id), (r) => r.status === 'needs_review');
    await page.goto(`${base}/agents/${agent.id}`);
    const activity = await text('.activity');
    assert.doesNotMatch(activity, /Nothing has happened/);
    assert.match(activity, /Waiting for review: 1 item of 2/);
    assert.match(activity, /started through the API/);
  });

  it('reviews one card per item, oldest first: accept, accept with edits, reject with a reason, send to a listed step', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Card review',
      nodes: [
        { kind: 'input', id: 'rows', format: 'csv', next: 'route' },
        {
          kind: 'branch',
          id: 'route',
          branches: [{ when: { field: 'vendor', op: 'equals', value: 'nobody' }, next: 'fix' }],
          otherwise: 'contact',
        },
        // A group of values and a list inside the item: shown and edited as named values and entries too.
        {
          kind: 'transform',
          id: 'contact',
          set: { contact: { name: 'Ann', email: 'ann@{{vendor}}.test' }, tags: ['new', 'eu'] },
          next: 'check',
        },
        { kind: 'flag_for_review', id: 'check', reason: 'check {{invoice}}', next: 'report' },
        { kind: 'transform', id: 'fix', set: { fixed: 'yes' }, next: 'report' },
        { kind: 'output', id: 'report', format: 'json' },
      ],
    });
    const started = await api('POST', `/agents/${agent.id}/run`, {
      input: 'invoice,vendor\nA-1,Acme\nA-2,Globex\nA-3,Initech\nA-4,Umbrella',
    });
    const runId = String(started.body.id);
    await waitForRun(h, runId, (r) => Number(r.needs_review) === 4);

    await page.goto(`${base}/reviews?run_id=${runId}`);
    await waitForText(/Item 4: check A-4/);
    const titles = (await text('.queue')).match(/Item \d: check A-\d/g);
    assert.deepEqual(titles, ['Item 1: check A-1', 'Item 2: check A-2', 'Item 3: check A-3', 'Item 4: check A-4']);
    // The data is shown once per card, as named values (not JSON): the edit fields appear only when asked for.
    const shown = await text('li.review:has-text("A-1") .data');
    assert.equal(shown.match(/A-1/g)?.length, 1);
    assert.match(shown, /\binvoice\s+A-1\b/);
    assert.match(shown, /\bvendor\s+Acme\b/);
    assert.match(shown, /\bcontact\s+name\s+Ann\s+email\s+ann@Acme\.test\b/);
    assert.match(shown, /\btags\s+new, eu\b/);
    assert.doesNotMatch(shown, /[{}"[\]]/, 'no JSON shown to people');
    assert.equal(await page.$('li.review .editor'), null);
    await shot('review-cards');

    const card = (invoice: string) => `li.review:has-text("check ${invoice}")`;
    const decided = (invoice: string) => page.waitForSelector(card(invoice), { state: 'detached' });
    await page.click(`${card('A-1')} button:has-text("Accept")`);
    await decided('A-1');
    assert.match(await text(), /Accepted\./);
    // The card and its button are gone: the answer takes the focus, not the top of the page.
    assert.equal(await page.evaluate('document.activeElement?.textContent?.trim()'), 'Accepted.');

    // Accepting with edits changes a field in a box of its own: no JSON to write.
    await page.check(`${card('A-2')} input[value="edit"]`);
    assert.equal(await page.$(`${card('A-2')} textarea`), null);
    await page.fill(`${card('A-2')} .editor .field:has(label:text-is("vendor")) input`, 'Globex Ltd');
    await page.fill(`${card('A-2')} [aria-label="contact: value of name"]`, 'Ann Lee');
    await page.fill(`${card('A-2')} [aria-label="tags: entry 2"]`, 'uk');
    await page.click(`${card('A-2')} button:has-text("Accept with these edits")`);
    await decided('A-2');
    assert.match(await text(), /Accepted with your output/);

    await page.check(`${card('A-3')} input[value="reject"]`);
    await page.fill(`${card('A-3')} input[name="reason"]`, 'duplicate invoice');
    await page.click(`${card('A-3')} button:has-text("Reject")`);
    await decided('A-3');
    assert.match(await text(), /Rejected: the item fails with your reason/);

    await page.check(`${card('A-4')} input[value="send_to"]`);
    const offered = await text(`${card('A-4')} select[name="node_id"]`);
    assert.match(offered, /fix/);
    assert.doesNotMatch(offered, /\bcheck\b/, 'not the step that flagged it');
    assert.doesNotMatch(offered, /\brows\b/, 'not the input node, which would read the item again as new input');
    assert.match(offered, /^Choose a step/, 'no step is chosen for the reviewer');
    await page.selectOption(`${card('A-4')} select[name="node_id"]`, 'fix');
    await shot('review-send-to');
    await page.click(`${card('A-4')} button:has-text("Send")`);
    await decided('A-4');
    assert.match(await text(), /Sent on to "fix"/);

    const ended = await waitForRun(h, runId);
    assert.equal(ended.status, 'completed');
    const rows = await items(h, runId);
    assert.deepEqual(
      rows.map((i) => i.status),
      ['done', 'done', 'failed', 'done'],
    );
    assert.equal(rows[1].output?.vendor ?? rows[1].data.vendor, 'Globex Ltd', 'accepted with the edit');
    assert.equal((rows[1].output ?? rows[1].data).invoice, 'A-2', 'the fields not edited go on as they were');
    assert.deepEqual((rows[1].output ?? rows[1].data).contact, { name: 'Ann Lee', email: 'ann@Globex.test' });
    assert.deepEqual((rows[1].output ?? rows[1].data).tags, ['new', 'uk']);
    assert.match(rows[2].error, /duplicate invoice/);
    assert.equal((rows[3].output ?? rows[3].data).fixed, 'yes', 'sent on through "fix"');
    await page.goto(`${base}/reviews?run_id=${runId}`);
    await waitForText(/Nothing is waiting for review/);
    assert.deepEqual(problems, []);
  });

  it('a cancelled run says after how many items it stopped, with the ones not run counted apart', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Cancel counts',
      nodes: [
        { kind: 'input', id: 'rows', format: 'csv', next: 'route' },
        {
          kind: 'branch',
          id: 'route',
          branches: [{ when: { field: 'amount', op: 'gt', value: 100 }, next: 'gate' }],
          otherwise: 'report',
        },
        { kind: 'approval', id: 'gate', message: 'Pay {{amount}}?', next: 'report' },
        { kind: 'output', id: 'report', format: 'json' },
      ],
    });
    const started = await api('POST', `/agents/${agent.id}/run`, {
      input: 'item,amount\nTaxi,20\nLunch,15\nHotel,400',
    });
    const runId = String(started.body.id);
    await waitForRun(h, runId, (r) => Number(r.done) === 2 && r.status === 'needs_review');
    await page.goto(`${base}/runs/${runId}`);
    await waitForText(/Pay 400\?/);
    await page.click('button:has-text("Cancel run")');
    await waitForText(/Cancelled after 2 of 3 items/);
    const progress = await text('.progress');
    assert.match(progress, /Cancelled after 2 of 3 items · 2 done, 1 not run \(cancelled\)/);
    assert.doesNotMatch(progress, /3 of 3|100%/);
    await shot('run-cancelled-counts');
    assert.deepEqual(problems, []);
  });
});
