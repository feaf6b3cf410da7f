// The console's Skills in a real browser against the real stack: an editor uploads a skill and a second version
// (from a .md file) and reads both; a too-large or empty one is refused with the reason and what was typed kept; a
// viewer sees the skills without the controls; Operator Mode attaches a skill pinned to a version; a run's details
// list the skills its item's model step had, with versions; an editor archives a skill. The model is the project's
// local Anthropic-compatible server (test/fakes/anthropic.ts) driven by the real SDK. Screenshots go to
// test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { loadSecretBox } from '../../db/secret-box';
import { reply, startFakeAnthropic, text as say, type FakeAnthropic, type MessagesRequest } from '../fakes/anthropic';
import { launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createTestWorkspace, waitForRun, type Harness } from '../support/harness';
import { checkedFetch } from '../support/openapi-check';
import { memberWithRole, type Person } from '../support/people';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers checked against the document

const shots = screenshots;

const systemText = (body: MessagesRequest) =>
  typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n\n');

describe('Skills in a browser: uploading versions, attaching one to an agent, and seeing it in run details', function () {
  this.timeout(300_000);
  let h: Harness;
  let fake: FakeAnthropic;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  let key = '';
  let editor: Person;
  let viewer: Person;
  const dialogs: string[] = [];
  const problems: string[] = [];
  const skillName = `refund-policy-${randomUUID().slice(0, 6)}`;
  const v1 =
    '# Refunds\n\nRefund within 30 days.\n\n<b id="injected">not HTML</b> <script>window.injected = 1</script>';
  const v2 = '# Refunds\n\nRefund within 14 days, and say so politely.';
  let skillId = '';
  let agentId = '';

  before(async function () {
    browser = await launchBrowser(this);

    fake = await startFakeAnthropic(() => reply([say('Refund approved.')]));
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-sonnet-4-6', unavailableRetries: 0 },
      } as never,
    });
    const t = await createTestWorkspace(h);
    workspaceId = t.workspace.id;
    key = t.key;

    ({ server, base } = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) }));
    editor = await memberWithRole(h.stack.knex, base, workspaceId, 'editor');
    viewer = await memberWithRole(h.stack.knex, base, workspaceId, 'viewer');

    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
    await fake?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  const text = (selector = 'main') => page.innerText(selector);
  const api = async (method: string, url: string, json?: unknown): Promise<{ status: number; body: Json }> => {
    const res = await checkedFetch(`${base}/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };

  async function signInAs(person: Person, role: string) {
    await page.goto(`${base}/dashboard`);
    if (await page.$('.whoami')) {
      await page.click('.whoami button:has-text("Sign out")');
      await page.waitForURL(/\/login$/);
    }
    await page.goto(`${base}/login?next=%2Fskills`);
    await page.fill('#email', person.email);
    await page.fill('#password', person.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/skills$/);
    assert.match(await text('.whoami'), new RegExp(`· ${role}`));
  }

  it('an editor uploads a skill, then a second version from a .md file, and reads both as text', async () => {
    await signInAs(editor, 'editor');
    assert.match(await text(), /No skills yet/);
    // The platform skills are listed with the tools that bring them in.
    assert.match(await text('tr[data-platform-skill="SQL databases"]'), /sql\.query/);
    assert.match(await text('tr[data-platform-skill="HTTP APIs"]'), /http\.request/);

    await page.fill('#k-name', skillName);
    await page.fill('#k-description', 'How refunds work');
    await page.fill('#k-content', v1);
    await page.click('form.upload button:has-text("Upload")');
    await page.waitForSelector(`tr[data-skill="${skillName}"]`);
    assert.match(await text('.notice-ok'), new RegExp(`Uploaded “${skillName}”`));
    const row = await text(`tr[data-skill="${skillName}"]`);
    assert.match(row, /How refunds work/);
    assert.match(row, /v1/);
    assert.match(row, new RegExp(`${Buffer.byteLength(v1)} B`));
    assert.match(row, new RegExp(editor.email.replace(/\./g, '\\.')));

    await page.click(`tr[data-skill="${skillName}"] a`);
    await page.waitForSelector('details[data-version="1"]');
    skillId = (await api('GET', '/skills')).body.data.find((s: Json) => s.name === skillName).id;

    // Version 2 from a file: it fills the box, which is what is uploaded.
    await page.setInputFiles('#k-file', [{ name: 'refunds.md', mimeType: 'text/markdown', buffer: Buffer.from(v2) }]);
    await page.waitForFunction(`document.querySelector('#k-content').value.includes('14 days')`);
    assert.equal(await page.inputValue('#k-description'), 'How refunds work', 'the description carries over');
    await page.click('form.upload button:has-text("Upload")');
    await page.waitForSelector('details[data-version="2"]');
    assert.match(await text('.notice-ok'), new RegExp(`Uploaded version 2 of “${skillName}”`));

    const skill = (await api('GET', `/skills/${skillId}`)).body;
    assert.deepEqual(
      skill.versions.map((v: Json) => v.version),
      [2, 1],
    );
    assert.equal((await api('GET', `/skills/${skillId}/versions/2`)).body.content, v2);

    // Both versions, newest first, each as its exact text: the Markdown is shown, never run as HTML.
    await page.click('details[data-version="1"] summary');
    assert.equal(await text('details[data-version="2"] pre'), v2);
    assert.equal(await text('details[data-version="1"] pre'), v1);
    assert.equal(await page.$('#injected'), null, 'the skill is not rendered as HTML');
    assert.equal(await page.evaluate('window.injected'), undefined, 'nor its script run');
    await shot('skill-versions');
    assert.deepEqual(problems, []);
  });

  it('a too-large or empty upload is refused with the reason, and what was typed is kept', async () => {
    await signInAs(editor, 'editor');
    const name = `too-big-${randomUUID().slice(0, 6)}`;
    const big = 'x'.repeat(100_001);
    await page.fill('#k-name', name);
    await page.fill('#k-description', 'far too long');
    await page.fill('#k-content', big);
    await page.click('form.upload button:has-text("Upload")');
    await page.waitForSelector('form.upload .notice-error');
    assert.match(await text('form.upload .notice-error'), /100001 bytes; a skill holds at most 100000 bytes/);
    assert.equal(await page.inputValue('#k-name'), name);
    assert.equal(await page.inputValue('#k-description'), 'far too long');
    assert.equal((await page.inputValue('#k-content')).length, big.length);

    await page.fill('#k-content', '   \n ');
    await page.click('form.upload button:has-text("Upload")');
    await page.waitForSelector('form.upload .notice-error:has-text("cannot be empty")');
    assert.equal(await page.inputValue('#k-name'), name);
    assert.ok(!(await api('GET', '/skills')).body.data.some((s: Json) => s.name === name), 'nothing was stored');
    await shot('skills-refused');
    assert.deepEqual(problems, []);
  });

  it('a viewer sees the skills and their versions without the upload or archive controls', async () => {
    await signInAs(viewer, 'viewer');
    assert.match(await text(`tr[data-skill="${skillName}"]`), /v2/);
    assert.equal(await page.$('form.upload'), null, 'no upload form');
    assert.equal(await page.$('#k-content'), null);
    await page.click(`tr[data-skill="${skillName}"] a`);
    await page.waitForSelector('details[data-version="2"]');
    assert.equal(await text('details[data-version="2"] pre'), v2);
    assert.equal(await page.$('form.upload'), null, 'no new-version form');
    assert.equal(await page.$('button:has-text("Archive")'), null, 'no Archive');
    assert.deepEqual(problems, []);
  });

  it('Operator Mode attaches the skill pinned to a version, and a run shows it in its details', async () => {
    const created = await api('POST', '/agents', {
      name: 'Refund replies',
      instructions: 'You answer refund requests.',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'answer' },
        { kind: 'llm', id: 'answer', instructions: 'Answer the request.', next: null },
      ],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    agentId = created.body.id;

    await signInAs(editor, 'editor');
    await page.goto(`${base}/agents/${agentId}/edit`);
    const pick = `[data-skill="${skillName}"]`;
    assert.equal(await page.isChecked(`${pick} input[type="checkbox"]`), false);
    await page.check(`${pick} input[type="checkbox"]`);
    const options = await page.evaluate(
      `[...document.querySelectorAll('${pick} select option')].map((o) => o.textContent.trim())`,
    );
    assert.deepEqual(options, ['newest (v2)', 'pinned to v2', 'pinned to v1']);
    await page.selectOption(`${pick} select`, '1');
    await shot('agent-editor-skills');
    await page.click('button:has-text("Save version 2")');
    await page.waitForURL(new RegExp(`/agents/${agentId}\\?saved=2$`));
    const version = (await api('GET', `/agents/${agentId}/versions/2`)).body;
    assert.deepEqual(version.spec.skills, [`${skillName}@1`]);

    // The saved choice is shown again; the skill page names the agent as using it.
    await page.goto(`${base}/agents/${agentId}/edit`);
    assert.equal(await page.isChecked(`${pick} input[type="checkbox"]`), true);
    assert.equal(await page.inputValue(`${pick} select`), '1');
    await page.goto(`${base}/skills/${skillId}`);
    assert.match(await text('.page-header'), /Used by Refund replies/);

    const started = await api('POST', `/agents/${agentId}/test-run`, {
      input: JSON.stringify([{ message: 'I want my money back' }]),
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const run = await waitForRun(h, started.body.id);
    assert.equal(run.status, 'completed', JSON.stringify(run));
    // The model was given version 1, as pinned.
    const prompt = systemText(fake.requests.at(-1)!.body);
    assert.match(prompt, new RegExp(`<skill name="${skillName}" version="1">`));

    await page.goto(`${base}/runs/${run.id}`);
    await page.click('[role="row"][aria-rowindex="1"]');
    await page.waitForSelector('.skill-context');
    const used = await text('.skill-context');
    assert.match(used, /Skills used/);
    assert.match(used, /answer/);
    assert.match(await text(`.skill-context li[data-skill="${skillName}"]`), new RegExp(`${skillName}\\s+v1\\s+user`));
    assert.doesNotMatch(used, /v2/);
    // The step was offered no tools, so no platform skill came with it.
    assert.doesNotMatch(used, /platform/);
    await shot('run-details-skills');
    assert.deepEqual(problems, []);
  });

  it('an editor archives a skill after confirming; uploading it again brings it back', async () => {
    await signInAs(editor, 'editor');
    const name = `tone-${randomUUID().slice(0, 6)}`;
    const made = await api('POST', '/skills', { name, content: 'Be brief and friendly.' });
    assert.equal(made.status, 201);
    await page.goto(`${base}/skills/${made.body.id}`);
    await page.click('button:has-text("Archive")');
    await page.waitForURL(/\/skills\?archived=/);
    assert.match(dialogs.at(-1) ?? '', new RegExp(`Archive “${name}”\\?`));
    assert.match(await text('.notice-ok'), new RegExp(`Archived “${name}”`));
    assert.equal(await page.$(`tr[data-skill="${name}"]`), null);
    assert.ok((await api('GET', `/skills/${made.body.id}`)).body.archived_at);

    await page.fill('#k-name', name);
    await page.fill('#k-content', 'Be brief.');
    await page.click('form.upload button:has-text("Upload")');
    await page.waitForSelector(`tr[data-skill="${name}"]`);
    assert.match(await text(`tr[data-skill="${name}"]`), /v2/);
    await shot('skills');
    assert.deepEqual(problems, []);
  });
});
