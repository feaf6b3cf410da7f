// Retrying failed items and testing a version on past items in a real browser against the real stack: an editor
// retries a run's failed item from its details page (the new run says what it retries, the first one links to it),
// then tests a new version on past items from the version history and reads the side-by-side comparison.
// Screenshots go to test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import http, { type Server } from 'node:http';
import path from 'node:path';
import { loadSecretBox } from '../../db/secret-box';
import { hydrated, launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, waitForRun, type Harness } from '../support/harness';
import { checkedFetch } from '../support/openapi-check';
import { memberWithRole, type Person } from '../support/people';

describe('retrying failed items and testing a version on past items in a browser', function () {
  this.timeout(300_000);
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  let key = '';
  let editor: Person;
  const problems: string[] = [];
  // A booking service that refuses invoice B until it is fixed.
  let refuse = new Set(['B']);
  const bookings: string[] = [];
  let booking: Server;
  let bookingUrl = '';

  before(async function () {
    browser = await launchBrowser(this);
    booking = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const id = String(JSON.parse(raw || '{}').id);
        bookings.push(id);
        res.writeHead(refuse.has(id) ? 400 : 200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => booking.listen(0, '127.0.0.1', r));
    bookingUrl = `http://127.0.0.1:${(booking.address() as { port: number }).port}/book`;
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    ({
      workspace: { id: workspaceId },
      key,
    } = await createTestWorkspace(h));
    ({ server, base } = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) }));
    editor = await memberWithRole(h.stack.knex, base, workspaceId, 'editor');
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('dialog', (d) => void d.accept());
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await new Promise((r) => booking?.close(r));
    await h?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  const booker = (threshold: number) => ({
    name: 'booker',
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'route' },
      {
        kind: 'branch',
        id: 'route',
        branches: [{ when: { field: 'amount', op: 'gt', value: threshold }, next: 'book' }],
        otherwise: 'small',
      },
      {
        kind: 'tool',
        id: 'book',
        tool: 'http.request',
        arguments: { method: 'POST', url: bookingUrl, body: { id: '{{id}}' } },
        save_as: 'booked',
        next: 'large',
      },
      { kind: 'output', id: 'large', format: 'json', fields: ['id'] },
      { kind: 'output', id: 'small', format: 'json', fields: ['id'] },
    ],
  });

  it('retries a failed item from run details, then tests a new version on past items side by side', async () => {
    const agent = await createLiveAgent(h, workspaceId, booker(100));
    const started = await checkedFetch(`${base}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        input: JSON.stringify([
          { id: 'A', amount: 500 },
          { id: 'B', amount: 700 },
          { id: 'C', amount: 60 },
        ]),
      }),
    });
    const first = await waitForRun(h, ((await started.json()) as { id: string }).id);
    assert.deepEqual([first.done, first.failed], [2, 1]);

    await page.goto(`${base}/login?next=${encodeURIComponent(`/runs/${first.id}`)}`);
    await hydrated(page);
    await page.fill('#email', editor.email);
    await page.fill('#password', editor.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(new RegExp(`/runs/${first.id}$`));
    await hydrated(page);
    await shot('run-retry-offered');

    refuse = new Set();
    await page.click('button:has-text("Retry 1 failed item")');
    await page.waitForURL(new RegExp(`/runs/(?!${first.id})[0-9a-f-]{36}$`));
    const retryId = page.url().split('/').pop()!;
    const retry = await waitForRun(h, retryId);
    assert.equal(retry.status, 'completed');
    assert.equal(bookings.filter((b) => b === 'B').length, 2, 'B booked again, A not');
    assert.equal(bookings.filter((b) => b === 'A').length, 1);
    await page.goto(`${base}/runs/${retryId}`);
    await hydrated(page);
    assert.match(
      await page.innerText('[data-testid="retry-links"]'),
      // B, the second item (seq 1), is item 2 to people.
      new RegExp(`Retries item 2 of\\s+run ${first.id.slice(0, 8)}`),
    );
    await shot('run-retry-run');
    await page.goto(`${base}/runs/${first.id}`);
    await hydrated(page);
    assert.match(
      await page.innerText('[data-testid="retry-links"]'),
      new RegExp(`Retried by run ${retryId.slice(0, 8)}`),
    );

    // Version 2 books from 50 up: tested on past items before it goes live.
    const edited = await checkedFetch(`${base}/v1/agents/${agent.id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(booker(50)),
    });
    assert.equal(edited.status, 200);
    const before = bookings.length;
    await page.goto(`${base}/agents/${agent.id}/versions?from=1&to=2`);
    await hydrated(page);
    await page.click('button:has-text("Test on past items")');
    await page.waitForURL(new RegExp(`/agents/${agent.id}/test-runs/[0-9a-f-]{36}$`));
    const testId = page.url().split('/').pop()!;
    await waitForRun(h, testId);
    await page.goto(page.url());
    await hydrated(page);
    const summary = await page.innerText('[data-testid="test-summary"]');
    // The last items of the agent's runs: A, B, C of the first run and B of the retry. C now routes to booking, and B
    // (failed in the first run, where the booking service refused it) now goes through: its booking is only planned.
    assert.match(summary, /3 of 4 items give the same output; 2 route differently; 1 no longer fails/);
    assert.match(await page.innerText('table.side-by-side'), /route changed/);
    assert.equal(bookings.length, before, 'the test run booked nothing');
    await shot('test-on-past-items');
    assert.deepEqual(problems, []);
  });
});
