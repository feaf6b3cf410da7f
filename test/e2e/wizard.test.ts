// The agent creation wizard in a real browser: from the Agents page, a goal with a file, the generated questions,
// the instructions edited, the integration it needs linked to Integrations, the workflow on the diagram, a test
// run and Ready; and with no model, a blank agent as the start. The model is the fake Anthropic server, scripted.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { addMember, createUser } from '../../db/accounts';
import { loadSecretBox } from '../../db/secret-box';
import { hydrated, launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, type Harness } from '../support/harness';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic';
import { goal, questions, validAgent, wizardModel } from '../support/wizard-model';

describe('the agent creation wizard in a browser', function () {
  this.timeout(300_000);
  let h: Harness;
  let fake: FakeAnthropic;
  let browser: Browser;
  let workspaceId = '';
  let page: Page;
  const servers: Server[] = [];
  const editor = { email: `eve-${randomUUID().slice(0, 6)}@example.test`, password: 'eve password 12' };
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    fake = await startFakeAnthropic(
      wizardModel([validAgent], [{ kind: 'slack', name: 'team-chat', purpose: 'Tell finance about flagged invoices' }]),
    );
    h = await createHarness({
      config: { model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-test', unavailableRetries: 0 } } as never,
    });
    const t = await createTestWorkspace(h);
    workspaceId = t.workspace.id;
    const user = await createUser(h.stack.knex, editor);
    await addMember(h.stack.knex, t.workspace.id, user.id, 'editor');
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => problems.push(e.message));
  });
  after(async () => {
    await browser?.close();
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    await h?.close();
    await fake?.close();
  });

  const web = async (harness: Harness) => {
    const { server, base } = await startWebWithConsole(harness, { secrets: loadSecretBox(h.config) });
    servers.push(server);
    return base;
  };
  const signIn = async (base: string) => {
    await page.goto(`${base}/login?next=%2Fagents`);
    if (!page.url().includes('/login')) return;
    await page.fill('#email', editor.email);
    await page.fill('#password', editor.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/agents$/);
  };
  const shot = (name: string) => page.screenshot({ path: path.join(screenshots, name), fullPage: true });

  it('takes a goal to a Ready agent in five steps', async () => {
    const base = await web(h);
    await signIn(base);
    await page.click('a:has-text("Create with the wizard")');
    await page.waitForURL(/\/agents\/new$/);
    await hydrated(page);

    // 1. The goal and a file.
    await page.fill('#w-goal', goal);
    await page.setInputFiles('#w-files', [
      { name: 'policy.txt', mimeType: 'text/plain', buffer: Buffer.from('Invoices over 1,000 need a second look.') },
    ]);
    await shot('wizard-1-goal.png');
    await page.click('button:has-text("Continue")');
    await page.waitForURL(/step=2/);
    await hydrated(page);

    // 2. The generated questions, answered.
    const asked = await page.innerText('main');
    for (const q of questions) assert.ok(asked.includes(q.question), `question shown: ${q.question}`);
    await page.fill('#w-a0', 'Emailed as JSON');
    await page.fill('#w-a1', 'Over 1,000');
    await shot('wizard-2-questions.png');
    await page.click('button:has-text("Write the instructions")');
    await page.waitForURL(/step=3/);
    await hydrated(page);

    // 3. The six parts, edited.
    assert.equal(await page.inputValue('#w-job'), 'Read each invoice and route the large ones to a person.');
    await page.fill('#w-runtime_parameters', 'Threshold: 1,000 euros.');
    await shot('wizard-3-instructions.png');
    await page.click('button:has-text("Save and continue")');
    await page.waitForURL(/step=4/);
    await hydrated(page);

    // 4. The integration it needs, with a link to connect it in Integrations (kind and name preselected).
    assert.match(await page.innerText('main'), /team-chat[\s\S]*Tell finance about flagged invoices/);
    const href = await page.evaluate(`document.querySelector('a[href*="/integrations?kind="]')?.getAttribute('href')`);
    assert.equal(href, '/integrations?kind=slack&name=team-chat');
    await shot('wizard-4-integrations.png');
    await page.click('button:has-text("Build the workflow")');
    await page.waitForURL(/step=5/);
    await hydrated(page);

    // 5. The graph on the diagram, the draft agent, a test run on the proposed sample, then Ready.
    await page.waitForSelector('svg');
    const diagram = await page.innerText('main');
    for (const id of ['invoices', 'large', 'report']) assert.ok(diagram.includes(id), `node ${id} drawn`);
    // Where an item's path ends is said in a word, not a bare dot.
    const ends = await page.evaluate(`[...document.querySelectorAll('svg .end-label')].map((t) => t.textContent)`);
    assert.ok((ends as string[]).length > 0 && (ends as string[]).every((t) => t === 'done'), JSON.stringify(ends));
    await shot('wizard-5-workflow.png');
    await page.click('button:has-text("Create the draft agent")');
    await page.waitForSelector('a:has-text("Edit in Operator Mode")');
    assert.equal(await page.inputValue('#w-input'), validAgent.sample_input);
    await page.click('button:has-text("Run test")');
    await page.waitForURL(/run=/);
    await page.waitForSelector('[data-testid="test-run"][data-status="completed"]');
    await page.click('button:has-text("Mark ready")');
    await page.waitForSelector('text=The agent is ready');
    await shot('wizard-5-ready.png');
    // The conversation that made it stays with the session (and the agent's creation history).
    assert.match(await page.innerText('details.history summary'), /Conversation with the model \(6 messages/);

    // This workspace's: suites of one process share the embedded database.
    const agent = await h.stack.knex('agents').where({ workspace_id: workspaceId, name: validAgent.name }).first();
    assert.equal(agent.state, 'ready');
    const session = await h.stack.knex('wizard_sessions').where({ agent_id: agent.id }).first();
    assert.match(session.instructions.runtime_parameters, /1,000 euros/);
    assert.deepEqual(problems, []);
  });

  it('when the model fails, keeps the goal and says why, with a way to ask again', async () => {
    const base = await web(h);
    await signIn(base);
    fake.setHandler(() => ({ status: 400, error: { type: 'invalid_request_error', message: 'prompt is too long' } }));
    try {
      await page.goto(`${base}/agents/new`);
      await hydrated(page);
      await page.fill('#w-goal', goal);
      await page.click('button:has-text("Continue")');
      await page.waitForURL(/step=2/);
      await hydrated(page);
      assert.match(await page.innerText('main'), /the model could not answer: 400 .*prompt is too long/);
      fake.setHandler(wizardModel([validAgent]));
      await page.click('button:has-text("Ask me the questions")');
      await page.waitForSelector('#w-a0');
    } finally {
      fake.setHandler(wizardModel([validAgent]));
    }
  });

  it('without a model, says why and starts from a blank agent', async () => {
    const base = await web({ ...h, config: { ...h.config, model: { ...h.config.model, apiKey: undefined } } });
    await signIn(base);
    await page.goto(`${base}/agents/new`);
    await hydrated(page);
    assert.match(await page.innerText('[data-testid="no-model"]'), /set ANTHROPIC_API_KEY/);
    await page.fill('#w-goal', 'Keep a list of orders');
    await page.click('button:has-text("Continue")');
    await page.waitForURL(/step=2/);
    await hydrated(page);
    assert.match(await page.innerText('main'), /Route CSV rows|route/i);
    await page.click('button:has-text("Use this starter")');
    await page.waitForURL(/step=5/);
    await hydrated(page);
    await page.waitForSelector('svg');
    await shot('wizard-no-model.png');
    assert.match(await page.innerText('main'), /Keep a list of orders/);
  });

  it('warns, before creating, of another agent with the same name, and creates it anyway when asked', async () => {
    await createLiveAgent(h, workspaceId, { name: 'keep a list of invoices', nodes: [{ kind: 'input', id: 'in' }] });
    const base = await web({ ...h, config: { ...h.config, model: { ...h.config.model, apiKey: undefined } } });
    await signIn(base);
    await page.goto(`${base}/agents/new`);
    await hydrated(page);
    await page.fill('#w-goal', 'Keep a list of invoices');
    await page.click('button:has-text("Continue")');
    await page.waitForURL(/step=2/);
    await hydrated(page);
    await page.click('button:has-text("Use this starter")');
    await page.waitForURL(/step=5/);
    await hydrated(page);
    assert.match(
      await page.innerText('[data-testid="same-name"]'),
      /An agent named “Keep a list of invoices” already exists\. You can create this one anyway/,
    );
    await shot('wizard-same-name.png');
    await page.click('button:has-text("Create the draft agent")');
    await page.waitForSelector('a:has-text("Edit in Operator Mode")');
    assert.equal(await page.$('[data-testid="same-name"]'), null, 'once made, the warning has done its job');
    const named = await h.stack
      .knex('agents')
      .where({ workspace_id: workspaceId })
      .whereRaw("lower(name) = 'keep a list of invoices'");
    assert.equal(named.length, 2, 'a warning, not a refusal');
  });
});
