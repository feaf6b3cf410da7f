// The console's Integrations page and Operator Mode's connections in a real browser against the real stack and a
// real PostgreSQL (Debian's, as a connected business database): an admin connects a database (a wrong password
// first, refused with the server's reason), tests it, lets it write, removes it; a viewer sees the list without the
// controls; an editor ticks a connection for an agent and picks it for a sql.query tool node. Screenshots go to
// test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import path from 'node:path';
import { addMember, createUser } from '../../db/accounts';
import type { Role } from '../../db/roles';
import { secretBox } from '../../db/secret-box';
import { launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, type Harness } from '../support/harness';
import { checkedFetch } from '../support/openapi-check';
import { startPostgresServer, type DatabaseServer } from '../support/servers';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers checked against the document

const shots = screenshots;

describe('Integrations in a browser: connecting a real PostgreSQL, and an agent acting through it', function () {
  this.timeout(300_000);
  let h: Harness;
  let db: DatabaseServer;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  let key = '';
  const people: Record<'admin' | 'viewer', { email: string; password: string }> = {
    admin: { email: `ada-${randomUUID().slice(0, 6)}@example.test`, password: 'ada password 12' },
    viewer: { email: `vic-${randomUUID().slice(0, 6)}@example.test`, password: 'vic password 12' },
  };
  /** The database's password after the first test changes it. */
  const rotated = `rotated-${randomUUID().slice(0, 8)}`;
  const dialogs: string[] = [];
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);

    [h, db] = await Promise.all([createHarness(), startPostgresServer()]);
    const t = await createTestWorkspace(h);
    workspaceId = t.workspace.id;
    key = t.key;
    for (const [role, person] of Object.entries(people) as [Role, { email: string; password: string }][]) {
      const user = await createUser(h.stack.knex, person);
      await addMember(h.stack.knex, workspaceId, user.id, role);
    }

    // the database listens on this machine
    ({ server, base } = await startWebWithConsole(h, {
      secrets: secretBox('integrations'),
      connectors: { allowHosts: ['127.0.0.1'] },
    }));

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
    await db?.stop();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  const text = (selector = 'main') => page.innerText(selector);
  const row = (name: string) => `tr[data-connection="${name}"]`;
  const api = async (method: string, url: string, json?: unknown): Promise<{ status: number; body: Json }> => {
    const res = await checkedFetch(`${base}/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };

  async function signInAs(who: 'admin' | 'viewer') {
    await page.goto(`${base}/dashboard`);
    if (await page.$('.whoami')) {
      await page.click('.whoami button:has-text("Sign out")');
      await page.waitForURL(/\/login$/);
    }
    await page.goto(`${base}/login?next=%2Fintegrations`);
    await page.fill('#email', people[who].email);
    await page.fill('#password', people[who].password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/integrations$/);
    assert.match(await text('.whoami'), new RegExp(`· ${who}`));
  }

  async function fillConnectForm(password: string) {
    await page.fill('#c-name', 'shop');
    await page.selectOption('#c-kind', 'postgres');
    await page.fill('#c-host', db.host);
    await page.fill('#c-port', String(db.port));
    await page.fill('#c-database', db.database);
    await page.fill('#c-user', db.user);
    await page.fill('#c-password', password);
    await page.fill('#c-row-limit', '500');
  }

  it('an admin connects a database (a wrong password is refused with the reason), tests it and lets it write', async () => {
    await signInAs('admin');
    assert.match(await text(), /Nothing connected yet/);

    const wrong = `wrong-${randomUUID().slice(0, 8)}`;
    await fillConnectForm(wrong);
    await page.click('button:has-text("Connect")');
    await page.waitForSelector('.connect .notice-error');
    assert.match(
      await text('.connect .notice-error'),
      /could not connect to postgres at 127\.0\.0\.1: password authentication failed for user "app"/,
    );
    // What was typed stays, but the password.
    assert.equal(await page.inputValue('#c-name'), 'shop');
    assert.equal(await page.inputValue('#c-host'), db.host);
    assert.equal(await page.inputValue('#c-port'), String(db.port));
    assert.equal(await page.inputValue('#c-database'), db.database);
    assert.equal(await page.inputValue('#c-user'), db.user);
    assert.equal(await page.inputValue('#c-row-limit'), '500');
    assert.equal(await page.inputValue('#c-password'), '');
    assert.ok(!(await page.content()).includes(wrong), 'the refused password is not in the page');
    assert.equal((await api('GET', '/connections')).body.data.length, 0, 'nothing was saved');

    await page.fill('#c-password', db.password);
    await page.click('button:has-text("Connect")');
    await page.waitForSelector(`${row('shop')}`);
    assert.match(await text('.notice-ok'), /Connected “shop”/);
    const listed = await text(row('shop'));
    assert.match(listed, /PostgreSQL/);
    assert.match(listed, new RegExp(`127\\.0\\.0\\.1:${db.port}`));
    assert.match(listed, /database shop as app/);
    assert.match(listed, /Connected/);
    assert.match(listed, /list tables\s+read rows/);
    assert.doesNotMatch(listed, /insert rows/);
    assert.match(listed, new RegExp(people.admin.email.replace('.', '\\.')));
    assert.match(listed, /never/, 'not used yet');
    assert.ok(!(await page.content()).includes(db.password), 'the password is never in the page');
    const [saved] = (await api('GET', '/connections')).body.data;
    assert.equal(saved.config.row_limit, 500);

    await page.click(`${row('shop')} button:has-text("Test")`);
    await page.waitForSelector('.notice-ok:has-text("answers")');
    assert.match(await text('.notice-ok'), /“shop” answers: PostgreSQL \d+/);

    // The database's password changes: Test says why it fails, the connection is listed failing, and Reconnect
    // with the new password brings it back.
    await db.admin.raw(`alter role app password '${rotated}'`);
    await page.click(`${row('shop')} button:has-text("Test")`);
    await page.waitForSelector('.notice-error:has-text("cannot connect")');
    assert.match(await text('.notice-error'), /“shop” cannot connect: .*password authentication failed for user "app"/);
    assert.match(await text(row('shop')), /Failing\s+could not connect to postgres/);
    await page.click(`${row('shop')} button:has-text("Reconnect")`);
    await page.fill('#e-shop-password', rotated);
    await page.click('button:has-text("Save and reconnect")');
    await page.waitForSelector('.notice-ok:has-text("Saved and reconnected")');
    assert.match(await text(row('shop')), /Connected/);
    assert.doesNotMatch(await text(row('shop')), /could not connect/);
    assert.ok(!(await page.content()).includes(rotated), 'the new password is not in the page either');

    // A rotated password that does not work is refused in the edit form, which stays open; the old one is kept.
    await page.click(`${row('shop')} button:has-text("Edit")`);
    await page.check('#e-shop-allow-writes');
    await page.fill('#e-shop-password', 'not-the-password');
    await page.click('button:has-text("Save and reconnect")');
    await page.waitForSelector('form.edit .notice-error');
    assert.match(await text('form.edit .notice-error'), /password authentication failed/);
    assert.equal(await page.isChecked('#e-shop-allow-writes'), true, 'what was typed stays');
    assert.equal(await page.inputValue('#e-shop-password'), '');
    assert.ok(!(await page.content()).includes('not-the-password'));
    assert.equal((await api('GET', `/connections/${saved.id}`)).body.config.allow_writes, false);

    // A blank password keeps the saved one: the change is tested with it and kept.
    await page.click('button:has-text("Save and reconnect")');
    await page.waitForSelector('.notice-ok:has-text("Saved and reconnected")');
    assert.match(await text(row('shop')), /list tables\s+read rows\s+insert rows\s+update rows/);
    const changed = (await api('GET', `/connections/${saved.id}`)).body;
    assert.equal(changed.config.allow_writes, true);
    assert.equal(changed.status, 'connected');
    await shot('integrations');
    assert.deepEqual(problems, []);
  });

  it('shows a viewer the connections without the controls', async () => {
    await signInAs('viewer');
    const listed = await text(row('shop'));
    assert.match(listed, /Connected/);
    assert.match(listed, /insert rows\s+update rows/);
    assert.equal(await page.$('#c-name'), null, 'no Connect form');
    assert.equal(await page.$('button:has-text("Test")'), null, 'no Test');
    assert.equal(await page.$('button:has-text("Edit")'), null, 'no Edit');
    assert.equal(await page.$('button:has-text("Remove")'), null, 'no Remove');
    await shot('integrations-viewer');
  });

  it("Operator Mode: an agent's connections and a sql.query node's connection are picked from lists", async () => {
    // A second connection the agent does not list: the node's connection is chosen among the agent's only.
    const other = await api('POST', '/connections', {
      name: 'warehouse',
      kind: 'postgres',
      config: { host: db.host, port: db.port, database: db.database, user: db.user },
      credentials: { password: rotated },
    });
    assert.equal(other.status, 201, JSON.stringify(other.body));
    const agent = await createLiveAgent(
      h,
      workspaceId,
      { name: 'Order lookup', nodes: [{ kind: 'input', id: 'in', format: 'lines', next: null }] },
      'draft',
    );

    await signInAs('admin');
    await page.goto(`${base}/agents/${agent.id}/edit`);
    await page.check('#e-conn-shop');
    await page.click('.palette button[data-kind="tool"]');
    await page.waitForSelector('#e-tool');
    await page.selectOption('#e-tool', 'sql.query');
    await page.waitForSelector('#e-connection');
    const options = await page.evaluate(`[...document.querySelectorAll('#e-connection option')].map((o) => o.value)`);
    assert.deepEqual(options, ['shop'], "only the agent's connections");
    await page.selectOption('#e-connection', 'shop');
    await shot('agent-editor-tool-picker');

    // The node's JSON follows the picks; the statement is typed there.
    await page.click('summary:has-text("Advanced: this node as JSON")');
    const node = JSON.parse(await page.inputValue('#e-node'));
    assert.equal(node.tool, 'sql.query');
    assert.equal(node.arguments.connection, 'shop');
    assert.ok('sql' in node.arguments, 'the required argument is there to fill in');
    assert.ok(!('url' in node.arguments), "the previous tool's arguments are gone");
    node.arguments.sql = 'select count(*) as n from pg_tables where schemaname = ?';
    node.arguments.params = ['{{text}}'];
    await page.fill('#e-node', JSON.stringify(node, null, 2));
    // The input node leads to it.
    await page.click('.svelte-flow__node[data-id="in"]');
    await page.waitForSelector('label[for="e-node"]:has-text("Node in")');
    await page.fill('#e-node', JSON.stringify({ kind: 'input', id: 'in', format: 'lines', next: node.id }, null, 2));
    await shot('agent-editor-connections');
    await page.click('button:has-text("Save version 2")');
    await page.waitForURL(new RegExp(`/agents/${agent.id}\\?saved=2$`));

    const version = (await api('GET', `/agents/${agent.id}/versions/2`)).body;
    assert.deepEqual(version.spec.connections, ['shop']);
    const saved = version.spec.nodes.find((n: { id: string }) => n.id === node.id);
    assert.equal(saved.tool, 'sql.query');
    assert.equal(saved.arguments.connection, 'shop');
    assert.equal(saved.arguments.sql, node.arguments.sql);
    assert.equal(version.spec.nodes.find((n: { id: string }) => n.id === 'in').next, node.id);

    // Unticking the connection the node uses is refused on save with the API's reason, and nothing is lost.
    await page.goto(`${base}/agents/${agent.id}/edit`);
    assert.equal(await page.isChecked('#e-conn-shop'), true, 'the saved list is shown');
    await page.click('#e-conn-shop');
    await page.click('button:has-text("Save version 3")');
    await page.waitForSelector('.notice-error');
    assert.match(
      await text('.notice-error'),
      /acts through the connection "shop", which the agent's "connections" do not list/,
    );
    assert.deepEqual(problems, []);
  });

  it('an admin removes a connection after confirming', async () => {
    await signInAs('admin');
    await page.click(`${row('warehouse')} button:has-text("Remove")`);
    await page.waitForSelector(`${row('warehouse')}`, { state: 'detached' });
    assert.match(dialogs.at(-1) ?? '', /Remove “warehouse”\?/);
    assert.match(await text('.notice-ok'), /Removed “warehouse”/);
    assert.deepEqual(
      (await api('GET', '/connections')).body.data.map((c: { name: string }) => c.name),
      ['shop'],
    );
    await page.click(`${row('shop')} button:has-text("Remove")`);
    await page.waitForSelector(`${row('shop')}`, { state: 'detached' });
    assert.match(await text(), /Nothing connected yet/);
    assert.deepEqual((await api('GET', '/connections')).body.data, []);
    assert.deepEqual(problems, []);
  });
});
