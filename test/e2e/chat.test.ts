// Chat Mode in a real browser, against the project's own Anthropic-compatible server streaming scripted answers over
// real HTTP: "Ask about this agent" opens a conversation with the agent in focus, the answer appears piece by piece
// while it streams, the run it started is linked and opens, a request to change the agent is pointed to Operator
// Mode, and the conversation is listed and kept.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { addMember, createUser } from '../../db/accounts';
import { loadSecretBox } from '../../db/secret-box';
import {
  reply,
  startFakeAnthropic,
  text,
  toolResultsOf,
  toolUse,
  type FakeAnthropic,
  type MessagesRequest,
} from '../fakes/anthropic';
import { launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, waitForRun, type Harness } from '../support/harness';

const lastQuestion = (body: MessagesRequest) => {
  const last = body.messages[body.messages.length - 1];
  return typeof last.content === 'string' ? last.content : '';
};

describe('Chat Mode in a browser: a streamed conversation about an agent', function () {
  this.timeout(300_000);
  let fake: FakeAnthropic;
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let agentId = '';
  const person = { email: `cleo-${randomUUID().slice(0, 6)}@example.test`, password: 'cleo password 12' };
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    fake = await startFakeAnthropic();
    h = await createHarness({
      config: {
        model: {
          apiKey: 'test-key',
          baseUrl: fake.url,
          name: 'claude-sonnet-4-6',
          unavailableRetries: 0,
          retrySeconds: 0.1,
        },
      } as never,
    });
    const t = await createTestWorkspace(h);
    const user = await createUser(h.stack.knex, person);
    await addMember(h.stack.knex, t.workspace.id, user.id, 'operator');
    agentId = (
      await createLiveAgent(h, t.workspace.id, {
        name: 'Invoice router',
        nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }],
      })
    ).id;
    ({ server, base } = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) }));
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => problems.push(e.message));
  });
  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
    await fake?.close();
  });

  it('asks about an agent, runs it, sees the answer stream in with a link to the run, and is pointed to Operator Mode', async () => {
    let runId = '';
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    fake.setHandler((body) => {
      const results = toolResultsOf(body);
      if (lastQuestion(body).startsWith('Run it'))
        return reply([text('Starting a run.'), toolUse('start_run', { agent_id: agentId, input: '[{"n":1}]' })]);
      if (lastQuestion(body).startsWith('Change'))
        return reply([
          text(`I can't change configuration from the chat; do it in Operator Mode: ${base}/agents/${agentId}/edit`),
        ]);
      runId = JSON.parse(String(results[0].content)).id;
      // Slow enough to be seen arriving: a pause after each event of the stream.
      return reply([text(`The run is under way: ${base}/runs/${runId} ${words}. Done.`)], { streamDelayMs: 60 });
    });

    await page.goto(`${base}/login?next=%2Fagents%2F${agentId}`);
    await page.fill('#email', person.email);
    await page.fill('#password', person.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(new RegExp(`/agents/${agentId}$`));
    await page.click('button:has-text("Ask about this agent")');
    await page.waitForURL(/\/chat\/[0-9a-f-]{36}$/);
    assert.match(await page.innerText('.thread header'), /About Invoice router/);

    await page.fill('.ask textarea', 'Run it with one row n=1');
    await page.click('.ask button:has-text("Send")');
    // While it streams: part of the answer is on the page, with the cursor, before the rest has come.
    await page.waitForFunction(
      `(() => { const m = document.querySelector('.msg-assistant .cursor')?.closest('.msg'); return m && /word\\d/.test(m.textContent) && !m.textContent.includes('Done.'); })()`,
    );
    assert.match(await page.innerText('.msg-assistant:last-child'), /start run/);
    await page.screenshot({ path: path.join(screenshots, 'chat-streaming.png'), fullPage: true });

    await page.waitForSelector('.msg-assistant .run-link');
    await page.waitForSelector('.cursor', { state: 'detached' });
    const answer = await page.innerText('.msg-assistant:last-child');
    assert.match(answer, /Done\./);
    assert.ok(answer.includes(`/runs/${runId}`), answer);
    const href = await page.evaluate(`document.querySelector('.msg-assistant .text a').getAttribute('href')`);
    assert.equal(href, `/runs/${runId}`);
    await waitForRun(h, runId);

    await page.fill('.ask textarea', 'Change its instructions to skip small invoices');
    await page.click('.ask button:has-text("Send")');
    await page.waitForSelector(`.msg-assistant .text a[href="/agents/${agentId}/edit"]`);
    await page.screenshot({ path: path.join(screenshots, 'chat-conversation.png'), fullPage: true });

    // Kept and listed, named after its first question; the run link opens the run.
    await page.goto(`${base}/chat`);
    assert.match(await page.innerText('.conversations'), /Run it with one row n=1/);
    await page.click('.conversations a');
    await page.waitForSelector('.msg-assistant .run-link');
    assert.equal((await page.$$('.msg')).length, 4);
    await page.click('.msg-assistant .run-link');
    await page.waitForURL(new RegExp(`/runs/${runId}$`));
    assert.deepEqual(problems, []);
  });
});
