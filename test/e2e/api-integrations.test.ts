// Integrations with a REST API and an OAuth 2.0 account, in a real browser against the real stack: an admin connects
// a local inventory API from its OpenAPI document (a wrong document URL first, refused with the reason), bearer
// auth with its token, and sees its operations listed; then connects an account at a real OAuth 2.0 provider
// (oidc-provider on this machine), signs in and consents there, and lands back on Integrations with it connected; a
// REST API then acts through that account, picked from the workspace's accounts. Screenshots go to
// test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { addMember, createUser } from '../../db/accounts';
import { secretBox } from '../../db/secret-box';
import { startInventoryApi, type InventoryApi } from '../fakes/inventory-api';
import { launchBrowser, listen, mountWeb, screenshots, type Browser, type Page } from '../support/browser';
import { createHarness, createTestWorkspace, type Harness } from '../support/harness';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider';
import { checkedFetch } from '../support/openapi-check';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers checked against the document

const shots = screenshots;

describe('Integrations in a browser: a REST API from its OpenAPI document, and an OAuth 2.0 account', function () {
  this.timeout(300_000);
  let h: Harness;
  let inventory: InventoryApi;
  let idp: TestOidcProvider;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let key = '';
  const admin = { email: `ada-${randomUUID().slice(0, 6)}@example.test`, password: 'ada password 12' };
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);

    // The provider needs the web process's callback before it starts, so the server listens first.
    ({ server, base } = await listen());
    [h, inventory, idp] = await Promise.all([
      createHarness({ worker: false }),
      startInventoryApi(),
      startOidcProvider(`${base}/v1/auth/sso/callback`, {
        connections: { redirectUri: `${base}/v1/connections/oauth/callback` },
      }),
    ]);
    const t = await createTestWorkspace(h);
    key = t.key;
    const user = await createUser(h.stack.knex, admin);
    await addMember(h.stack.knex, t.workspace.id, user.id, 'admin');

    // The inventory API and the provider listen on this machine.
    await mountWeb({ server, base }, h, {
      secrets: secretBox('api-integrations'),
      connectors: { allowHosts: ['127.0.0.1'] },
    });

    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
    await inventory?.close();
    await idp?.close();
  });

  afterEach(async function () {
    // What the browser showed when a step failed, to look at.
    if (this.currentTest?.state === 'failed' && page)
      await shot(`api-integrations-failed-${this.currentTest.title.slice(0, 40)}`);
  });

  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  const text = (selector = 'main') => page.innerText(selector);
  const row = (name: string) => `tr[data-connection="${name}"]`;
  const api = async (method: string, url: string): Promise<{ status: number; body: Json }> => {
    const res = await checkedFetch(`${base}/v1${url}`, { method, headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: await res.json() };
  };
  const listItems = (selector: string) =>
    page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => e.textContent.trim())`);

  async function signIn(next: string) {
    await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
    await page.fill('#email', admin.email);
    await page.fill('#password', admin.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(new RegExp(`${next}$`));
  }

  it('an admin connects the inventory API from its document (a wrong URL first) and sees its operations', async () => {
    await signIn('/integrations');
    await page.selectOption('#c-kind', 'openapi');
    await page.waitForSelector('#c-document-url'); // the page is live: its settings follow the kind
    await page.fill('#c-name', 'inventory');
    assert.equal(await page.$('#c-host'), null, 'the SQL settings are gone');
    await page.fill('#c-document-url', `${inventory.url}/no-such-document.json`);
    await page.fill('#c-operations', 'getItem, createOrder');
    await page.selectOption('#c-auth', 'bearer');
    await page.fill('#c-secret', inventory.token);
    await page.click('button:has-text("Connect")');
    await page.waitForSelector('.connect .notice-error');
    const refusal = await text('.connect .notice-error');
    assert.ok(refusal.includes(`could not connect to openapi at ${inventory.url}/no-such-document.json`), refusal);
    assert.match(refusal, /404/);
    // What was typed stays, but the token.
    assert.equal(await page.inputValue('#c-name'), 'inventory');
    assert.equal(await page.inputValue('#c-kind'), 'openapi');
    assert.equal(await page.inputValue('#c-operations'), 'getItem, createOrder');
    assert.equal(await page.inputValue('#c-auth'), 'bearer');
    assert.equal(await page.inputValue('#c-secret'), '');
    assert.ok(!(await page.content()).includes(inventory.token), 'the token is not in the page');
    assert.equal((await api('GET', '/connections')).body.data.length, 0, 'nothing was saved');
    await shot('integrations-api-refused');

    await page.fill('#c-document-url', `${inventory.url}/openapi.json`);
    await page.fill('#c-secret', inventory.token);
    await page.click('button:has-text("Connect")');
    await page.waitForSelector(row('inventory'));
    assert.match(await text('.notice-ok'), /Connected “inventory”: 2 operations are tools\./);
    assert.deepEqual(await listItems('.offered li'), ['api.inventory.getItem', 'api.inventory.createOrder']);
    const listed = await text(row('inventory'));
    assert.match(listed, /REST API \(OpenAPI\)/);
    assert.ok(listed.includes(`${inventory.url}/v1`), 'the row shows the API’s server');
    assert.match(listed, /Inventory 1\.4\.0, with a bearer token/);
    assert.match(listed, /GET \/items\/\{sku\} \(getItem\)/);
    assert.match(listed, /POST \/orders \(createOrder\)/);
    assert.doesNotMatch(listed, /getBroken/, 'only the chosen operations');
    assert.match(listed, /Connected/);
    assert.ok(!(await page.content()).includes(inventory.token), 'the token is never in the page');

    await page.click(`${row('inventory')} button:has-text("Test")`);
    await page.waitForSelector('.notice-ok:has-text("answers")');
    assert.match(await text('.notice-ok'), /“inventory” answers: Inventory 1\.4\.0\./);
    assert.deepEqual(await listItems('.offered li'), ['getItem', 'createOrder']);

    // Editing shows the settings but not the token; saving with a blank token keeps it.
    await page.click(`${row('inventory')} button:has-text("Edit")`);
    assert.equal(await page.inputValue('#e-inventory-document-url'), `${inventory.url}/openapi.json`);
    assert.equal(await page.inputValue('#e-inventory-operations'), 'getItem, createOrder');
    assert.equal(await page.inputValue('#e-inventory-auth'), 'bearer');
    assert.equal(await page.inputValue('#e-inventory-secret'), '');
    await page.click('button:has-text("Save and reconnect")');
    await page.waitForSelector('.notice-ok:has-text("Saved and reconnected")');
    assert.match(await text(row('inventory')), /Connected/);
    const saved = (await api('GET', '/connections')).body.data[0];
    assert.deepEqual(saved.config.auth, { type: 'bearer' });
    assert.deepEqual(saved.config.operations, ['getItem', 'createOrder']);
    assert.ok(!(await page.content()).includes(inventory.token));
    await shot('integrations-api');
    assert.deepEqual(problems, []);
  });

  it('an admin connects an OAuth 2.0 account: signs in and consents at the provider, and is back connected', async () => {
    await page.goto(`${base}/integrations`);
    await page.selectOption('#c-kind', 'oauth2');
    await page.waitForSelector('#c-issuer'); // the page is live: its settings follow the kind
    await page.fill('#c-name', 'profile-account');
    await page.fill('#c-issuer', idp.issuer);
    await page.fill('#c-client-id', idp.connectionClient!.id);
    await page.fill('#c-client-secret', idp.connectionClient!.secret);
    await page.fill('#c-scopes', 'openid email offline_access');
    assert.match(await text('.connect'), new RegExp(`Register ${base}/v1/connections/oauth/callback`));
    await page.click('button:has-text("Save and authorize")');

    // At the provider: its sign-in page (any login name), then its consent page.
    await page.waitForURL(new RegExp(`^${idp.issuer}/interaction/`));
    await page.waitForSelector('input[name="login"]');
    await page.fill('input[name="login"]', 'ana@example.test');
    await page.fill('input[name="password"]', 'any');
    await page.click('button[type="submit"]');
    await page.waitForSelector('button[type="submit"]:has-text("Continue")');
    await page.click('button[type="submit"]:has-text("Continue")');

    await page.waitForURL(new RegExp(`^${base}/integrations\\?connected=profile-account$`));
    await page.waitForSelector(row('profile-account'));
    assert.match(await text('.notice-ok'), /Authorized “profile-account”/);
    const listed = await text(row('profile-account'));
    assert.match(listed, /OAuth 2\.0 account/);
    assert.ok(listed.includes(idp.issuer), 'the row shows the provider’s issuer');
    assert.match(listed, /Connected/);
    assert.equal(await page.$(`${row('profile-account')} button:has-text("Authorize")`), null, 'nothing to authorize');
    const account = (await api('GET', '/connections')).body.data.find((c: Json) => c.name === 'profile-account');
    assert.equal(account.status, 'connected');
    assert.ok(!(await page.content()).includes(idp.connectionClient!.secret), 'the client secret is never in the page');
    await shot('integrations-oauth-connected');
    assert.deepEqual(problems, []);
  });

  it("a REST API acts through the account, picked from the workspace's accounts (its document pasted as YAML)", async () => {
    await page.goto(`${base}/integrations`);
    await page.selectOption('#c-kind', 'openapi');
    await page.waitForSelector('#c-document-url'); // the page is live: its settings follow the kind
    await page.fill('#c-name', 'profile');
    await page.check('input[name="source"][value="document"]');
    await page.waitForSelector('#c-document');
    await page.fill(
      '#c-document',
      [
        'openapi: 3.0.3',
        'info: { title: Profile, version: "1" }',
        `servers: [{ url: "${idp.issuer}" }]`,
        'paths:',
        '  /me:',
        '    get:',
        '      operationId: whoAmI',
        '      responses: { "200": { description: the account } }',
      ].join('\n'),
    );
    await page.selectOption('#c-auth', 'oauth2');
    assert.deepEqual(await listItems('#c-account option'), ['profile-account']);
    assert.equal(await page.$('#c-secret'), null, 'the account has the token: no secret to type');
    await page.click('button:has-text("Connect")');
    await page.waitForSelector(row('profile'));
    assert.match(await text('.notice-ok'), /Connected “profile”: 1 operation is a tool\./);
    assert.deepEqual(await listItems('.offered li'), ['api.profile.whoAmI']);
    const listed = await text(row('profile'));
    assert.ok(listed.includes(idp.issuer), listed);
    assert.match(listed, /Profile 1, as the account “profile-account”/);
    assert.match(listed, /GET \/me \(whoAmI\)/);
    const profile = (await api('GET', '/connections')).body.data.find((c: Json) => c.name === 'profile');
    assert.deepEqual(profile.config.auth, { type: 'oauth2', connection: 'profile-account' });
    await shot('integrations-api-oauth');
    assert.deepEqual(problems, []);
  });
});
