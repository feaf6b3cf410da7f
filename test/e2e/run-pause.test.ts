// Pausing and resuming a run from its details page in a real browser against the real stack: an operator pauses a
// run whose items wait on approvals, the page says Paused and offers Resume, a decision taken while paused is acted on
// only after Resume, and the run then completes. Screenshots go to test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import path from 'node:path';
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
import { checkedFetch } from '../support/openapi-check';
import { memberWithRole, type Person } from '../support/people';

const gated = {
  name: 'gated payments',
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'route' },
    {
      kind: 'branch',
      id: 'route',
      branches: [{ when: { field: 'amount', op: 'gt', value: 100 }, next: 'gate' }],
      otherwise: 'count',
    },
    { kind: 'approval', id: 'gate', message: 'pay {{amount}}?', next: 'count' },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'paid', by: '{{amount}}' } },
  ],
};

describe('pausing and resuming a run from run details in a browser', function () {
  this.timeout(300_000);
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  let key = '';
  let operator: Person;
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    h = await createHarness();
    ({
      workspace: { id: workspaceId },
      key,
    } = await createTestWorkspace(h));
    ({ server, base } = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) }));
    operator = await memberWithRole(h.stack.knex, base, workspaceId, 'operator');
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('dialog', (d) => void d.accept());
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  const paid = async (agentId: string) =>
    Number((await h.stack.knex('agent_state').where({ agent_id: agentId, key: 'paid' }).first())?.value ?? 0);

  it('an operator pauses a run, decides an approval while paused, resumes, and the run completes', async () => {
    const agent = await createLiveAgent(h, workspaceId, gated);
    const run = await startTestRun(h, workspaceId, agent.id, JSON.stringify([{ amount: 5 }, { amount: 500 }]));
    await waitForRun(h, run.id, (r) => r.status === 'needs_review' && Number(r.done) === 1);

    await page.goto(`${base}/login?next=${encodeURIComponent(`/runs/${run.id}`)}`);
    await hydrated(page);
    await page.fill('#email', operator.email);
    await page.fill('#password', operator.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(new RegExp(`/runs/${run.id}$`));
    await hydrated(page);

    await page.click('button:has-text("Pause run")');
    await page.waitForSelector('button:has-text("Resume run")');
    assert.match(await page.innerText('.title-row'), /Paused/);
    assert.match(await page.innerText('main'), /Paused\. Steps under way finish theirs/);
    assert.equal((await h.stack.knex('runs').where({ id: run.id }).first()).status, 'paused');
    await shot('run-paused');

    // The approval is still open while paused; deciding it (here through the API) releases nothing yet.
    const approval = await h.stack.knex('approvals').where({ run_id: run.id }).first();
    const decided = await checkedFetch(`${base}/v1/approvals/${approval.id}/decision`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    assert.equal(decided.status, 200);
    await new Promise((r) => setTimeout(r, 2_000));
    assert.equal(await paid(agent.id), 5, 'the approved item waits for the resume');

    await page.click('button:has-text("Resume run")');
    await page.waitForSelector('button:has-text("Pause run")', { state: 'detached' }).catch(() => undefined);
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed', String(done.error));
    assert.equal(await paid(agent.id), 505);
    await page.goto(`${base}/runs/${run.id}`);
    await hydrated(page);
    assert.match(await page.innerText('.title-row'), /Completed/);
    assert.match(
      await page.innerText('main'),
      /run paused by .*\n?[\s\S]*run resumed by|run resumed by[\s\S]*run paused by/,
    );
    await shot('run-resumed-completed');
    assert.deepEqual(problems, []);
  });
});
