// Settings in a real browser against the real stack: an owner turns on two-factor by scanning a QR code (a wrong code
// first, which keeps the setup open), saves the recovery codes, creates an API key that works with its scopes and
// expiry, sees it used, revokes it, and reads the sign-ins and changes in the audit log. An operator is not offered
// the agent editor; forms keep what was typed after a refusal. Screenshots go to test-output/screenshots.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import path from 'node:path';
import * as OTPAuth from 'otpauth';
import { loadSecretBox } from '../../db/secret-box';
import { hydrated, launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, type Harness } from '../support/harness';
import { memberWithRole, type Person } from '../support/people';

describe('settings in a browser: two-factor, API keys, the audit log, roles', function () {
  this.timeout(300_000);
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  let owner: Person;
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    h = await createHarness({ worker: false });
    ({
      workspace: { id: workspaceId },
    } = await createTestWorkspace(h));
    ({ server, base } = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) }));
    owner = await memberWithRole(h.stack.knex, base, workspaceId, 'owner');
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
  const text = (selector = 'main') => page.innerText(selector);

  async function signIn(email: string, password: string, next = '/settings') {
    await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
    await hydrated(page);
    await page.fill('#email', email);
    await page.fill('#password', password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(new RegExp(`${next.replace(/[/?]/g, '\\$&')}$`));
    await hydrated(page);
  }

  async function signOut() {
    await page.click('.whoami button:has-text("Sign out")');
    await page.waitForURL(/\/login$/);
  }

  it('turns on two-factor from a QR code: a wrong code keeps the setup open, the right one shows the recovery codes', async () => {
    await signIn(owner.email, owner.password);
    // The owner's own role is shown, not offered as a select they could change.
    assert.equal(await page.$(`select[aria-label="Role of ${owner.email}"]`), null);

    await page.click('button:has-text("Set up")');
    await page.waitForSelector('img.qr');
    await hydrated(page);
    const qr = (await page.evaluate(`document.querySelector('img.qr').getAttribute('src')`)) as string;
    assert.match(qr, /^data:image\/png;base64,/);
    const secret = (await text('.tf-secret')).trim();
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    await shot('two-factor-setup');

    const wrong = totp.generate() === '123456' ? '654321' : '123456';
    await page.fill('#tf-code', wrong);
    await page.click('button:has-text("Turn on")');
    await page.waitForSelector('.notice-error');
    assert.match(await text('.notice-error'), /That code is not right/);
    assert.equal((await text('.tf-secret')).trim(), secret, 'the same key, still open for another try');
    assert.ok(await page.$('img.qr'));
    await shot('two-factor-wrong-code');

    await hydrated(page);
    await page.fill('#tf-code', totp.generate());
    await page.click('button:has-text("Turn on")');
    await page.waitForSelector('ol.codes');
    await hydrated(page);
    const codes = (await text('ol.codes')).split(/\s+/).filter(Boolean);
    assert.equal(codes.length, 10);
    assert.ok(codes.every((c) => /^[0-9a-f]{10}$/.test(c)));
    assert.ok(await page.$('button:has-text("Copy codes")'));
    const download = (await page.evaluate(
      `document.querySelector('a[download="cadre-recovery-codes.txt"]').getAttribute('href')`,
    )) as string;
    assert.ok(
      codes.every((c) => decodeURIComponent(download).includes(c)),
      'the download holds every code',
    );
    assert.ok(await page.$('button:has-text("Done")[disabled]'), 'Done waits for "I have saved them"');
    await shot('two-factor-recovery-codes');
    await page.check('label:has-text("I have saved them") input');
    await page.click('a:has-text("Done")');
    await page.waitForSelector('button:has-text("Turn off")');
    assert.match(await text(), /On\. Sign-in asks for a code/);

    // Signing in again asks for the code; a wrong code keeps the email and the password typed.
    await signOut();
    await hydrated(page);
    await page.fill('#email', owner.email);
    await page.fill('#password', owner.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForSelector('#code');
    assert.equal(await page.inputValue('#password'), owner.password, 'the password is still there');
    await page.fill('#code', wrong);
    await page.click('button:has-text("Sign in")');
    await page.waitForFunction(`/not right/.test(document.querySelector('.notice-error')?.textContent ?? '')`);
    assert.equal(await page.inputValue('#password'), owner.password);
    assert.equal(await page.inputValue('#email'), owner.email);
    await page.fill('#code', codes[0]);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/dashboard$/);

    // The workspace's audit log shows these, with who did them.
    await page.goto(`${base}/settings`);
    const audit = await text('section[aria-labelledby="audit"]');
    // In words, not the API's codes (login.succeeded, two_factor.enabled…).
    for (const action of ['Signed in', 'Sign-in failed', 'Turned on two-factor'])
      assert.match(audit, new RegExp(`${owner.email.replace(/\./g, '\\.')}\\s+${action}`));
    assert.doesNotMatch(audit, /login\.succeeded|two_factor\./);
  });

  it('creates an API key with its scopes and expiry, shows it once, sees it used, and revokes it', async () => {
    await page.goto(`${base}/settings`);
    await hydrated(page);
    await page.fill('#key-name', 'Nightly export');
    await page.selectOption('#key-expiry', '30');
    await page.click('button:has-text("Create key")');
    await page.waitForSelector('.new-key');
    const key = (await text('.new-key code')).trim();
    assert.match(key, /^cadre_[a-z0-9]{12}_/);
    assert.ok(await page.$('.new-key button:has-text("Copy key")'));
    await shot('api-key-created');

    const agents = await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(agents.status, 200, 'a read key reads');
    const change = await fetch(`${base}/v1/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"name":"x","nodes":[{"kind":"input","id":"in","next":null}]}',
    });
    assert.equal(change.status, 403, 'without manage it changes nothing');

    // Shown once: a reload lists it without the secret, with its last use (recorded as the request ends).
    const row = 'table.api-keys tr:has-text("Nightly export")';
    const stored = () => h.stack.knex('api_keys').where({ name: 'Nightly export' }).first('expires_at', 'last_used_at');
    const deadline = Date.now() + 30_000;
    while (!(await stored()).last_used_at) {
      if (Date.now() > deadline) throw new Error('the key was never recorded as used');
      await new Promise((r) => setTimeout(r, 200));
    }
    await page.goto(`${base}/settings`);
    assert.equal(await page.$('.new-key'), null);
    assert.ok(!(await text()).includes(key), 'the secret is not shown again');
    assert.match(await text(`${row} td:nth-child(2)`), /read, run/);
    assert.doesNotMatch(await text(`${row} td:nth-child(4)`), /never/, 'last used is shown');
    const days = (new Date((await stored()).expires_at).getTime() - Date.now()) / 86_400_000;
    assert.ok(days > 29 && days <= 30, `expires in 30 days (${days})`);
    await shot('api-keys');

    await hydrated(page);
    await page.click(`${row} button:has-text("Revoke")`);
    await page.waitForSelector('.notice-ok');
    assert.match(await text('.notice-ok'), /revoked/);
    assert.match(await text(row), /revoked/);
    const refused = await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(refused.status, 401);
    // The audit log names the key revoked as it named it created, not by its id.
    await page.goto(`${base}/settings`);
    const audit = await text('section[aria-labelledby="audit"]');
    assert.match(audit, /Revoked an API key\s+Nightly export/);
    assert.match(audit, /Created an API key\s+Nightly export/);
  });

  it('keeps what was typed when the new-agent form is refused, and warns of a second agent with the same name', async () => {
    await createLiveAgent(h, workspaceId, { name: 'Invoice router', nodes: [{ kind: 'input', id: 'in', next: null }] });
    await page.goto(`${base}/agents`);
    await hydrated(page);
    await page.click('summary:has-text("New agent")');
    await page.fill('#a-name', 'invoice router');
    await page.fill('#a-description', 'Routes the invoices of the second office');
    await page.click('button:has-text("Create and edit")');
    await page.waitForSelector('.notice-error');
    assert.match(await text('.notice-error'), /An agent named “invoice router” already exists/);
    assert.equal(await page.inputValue('#a-description'), 'Routes the invoices of the second office');
    assert.equal(await page.inputValue('#a-name'), 'invoice router');
    await shot('agent-same-name');
    await page.check('input[name="same_name_ok"]');
    await page.click('button:has-text("Create and edit")');
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}\/edit$/);
  });

  it('asks once before importing an agent named as an existing one, keeping the JSON, then imports it', async () => {
    await createLiveAgent(h, workspaceId, {
      name: 'Expense checker',
      nodes: [{ kind: 'input', id: 'in', next: null }],
    });
    const exported = JSON.stringify({ name: 'EXPENSE CHECKER', nodes: [{ kind: 'input', id: 'in', next: null }] });
    const named = () =>
      h.stack.knex('agents').where({ workspace_id: workspaceId }).whereRaw("lower(name) = 'expense checker'");
    await page.goto(`${base}/agents`);
    await hydrated(page);
    await page.click('summary:has-text("Import JSON")');
    await page.fill('#a-json', exported);
    await page.click('button:has-text("Import as a draft")');
    await page.waitForSelector('.notice-error');
    assert.match(await text('.notice-error'), /An agent named “EXPENSE CHECKER” already exists/);
    assert.equal(await page.inputValue('#a-json'), exported, 'the JSON is kept');
    assert.equal((await named()).length, 1, 'nothing imported before the person says so');
    await shot('agent-import-same-name');
    await page.check('input[name="same_name_ok"]');
    await page.click('button:has-text("Import as a draft")');
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}$/);
    assert.equal((await named()).length, 2);
  });

  it('does not offer an operator the agent editor, and answers its address with why', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'Operator check',
      nodes: [{ kind: 'input', id: 'in', next: null }],
    });
    const operator = await memberWithRole(h.stack.knex, base, workspaceId, 'operator');
    await page.goto(`${base}/dashboard`);
    await signOut();
    await signIn(operator.email, operator.password, `/agents/${agent.id}`);
    assert.equal(await page.$('a:has-text("Edit")'), null);
    await page.goto(`${base}/agents/${agent.id}/edit`);
    assert.match(await text(), /Not allowed[\s\S]*Your role \(operator\) cannot change agents/);
    assert.equal(await page.$('button:has-text("Save")'), null);
    await shot('operator-edit-refused');
    // Settings shows an operator no API keys (admins manage them).
    await page.goto(`${base}/settings`);
    assert.equal(await page.$('#key-name'), null);
    assert.deepEqual(problems, []);
  });
});
