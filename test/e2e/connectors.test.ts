// A connector's form in a real browser: the Integrations page draws it from the connector's schema (here the DuckDB
// warehouse over a directory of CSV files), shows the API's refusal with what was typed, connects, tests and edits
// it; Operator Mode lists the connector's tools under its name and offers only connections of its kind; the agent
// then runs and reads the files.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { addMember, createUser } from '../../db/accounts';
import { loadSecretBox } from '../../db/secret-box';
import { launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, items, type Harness } from '../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../support/connections';
import { startPostgresServer, type DatabaseServer } from '../support/servers';

describe('Connectors in a browser: a DuckDB warehouse connected from its schema-drawn form', function () {
  this.timeout(300_000);
  let h: Harness;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let c: ConnectorApi;
  let workspaceId = '';
  let root = '';
  let shop: DatabaseServer;
  const admin = { email: `ada-${randomUUID().slice(0, 6)}@example.test`, password: 'ada password 12' };
  const problems: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    root = await mkdtemp(path.join(tmpdir(), 'cadre-warehouse-'));
    const warehouse = { dirs: [root] };
    shop = await startPostgresServer();
    h = await createHarness({ config: { warehouse, http: { allowHosts: ['127.0.0.1'] } } as never });
    const t = await createTestWorkspace(h);
    workspaceId = t.workspace.id;
    // A workspace's warehouse files are in its own directory under the root.
    await mkdir(path.join(root, workspaceId, 'sales'), { recursive: true });
    await writeFile(
      path.join(root, workspaceId, 'sales', 'customers.csv'),
      'id,name,country\n1,Acme,DE\n2,Globex,US\n',
    );
    const user = await createUser(h.stack.knex, admin);
    await addMember(h.stack.knex, workspaceId, user.id, 'admin');
    ({ server, base } = await startWebWithConsole(h, {
      // The worker's key: runs open what the console sealed.
      secrets: loadSecretBox(h.config),
      connectors: { allowHosts: ['127.0.0.1'], warehouseDirs: warehouse.dirs },
    }));
    c = connectorApi(h, base, t.key, workspaceId);
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => problems.push(e.message));
  });
  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
    await rm(root, { recursive: true, force: true });
    await shop?.stop();
  });

  const text = (selector = 'main') => page.innerText(selector);
  const row = (name: string) => `tr[data-connection="${name}"]`;

  it('an admin connects a warehouse through its form, tests it and changes its row limit', async () => {
    await page.goto(`${base}/login?next=%2Fintegrations`);
    await page.fill('#email', admin.email);
    await page.fill('#password', admin.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/integrations$/);

    const kinds = await page.evaluate(`[...document.querySelectorAll('#c-kind option')].map((o) => o.textContent)`);
    assert.ok((kinds as string[]).includes('DuckDB warehouse'), `the connectors are offered: ${String(kinds)}`);
    await page.fill('#c-name', 'sales');
    await page.selectOption('#c-kind', 'duckdb');
    await page.waitForSelector('#c-config-path');
    assert.match(await text('form.connect'), /Read-only SQL over Parquet, CSV and JSON files/);
    assert.equal(await page.inputValue('#c-config-row_limit'), '1000', "the connector's default");
    await page.fill('#c-config-path', '/etc');
    await page.fill('#c-config-row_limit', '50');
    await page.click('button:has-text("Connect")');
    await page.waitForSelector('.connect .notice-error');
    assert.match(await text('.connect .notice-error'), /outside the directories this deployment allows/);
    assert.equal(await page.inputValue('#c-config-path'), '/etc', 'what was typed stays');
    assert.equal(await page.inputValue('#c-config-row_limit'), '50');

    await page.fill('#c-config-path', 'sales');
    await page.click('button:has-text("Connect")');
    await page.waitForSelector(row('sales'));
    assert.match(await text('.notice-ok'), /Connected “sales” \(DuckDB warehouse\)/);
    const listed = await text(row('sales'));
    assert.match(listed, /DuckDB warehouse/);
    assert.ok(listed.includes(path.join(root, workspaceId, 'sales')), 'where it points: the real path');
    assert.match(listed, /list tables\s+query/);
    const [saved] = (await c.call('GET', '/connections')).body.data;
    assert.equal(saved.config.row_limit, 50);

    await page.click(`${row('sales')} button:has-text("Test")`);
    await page.waitForSelector('.notice-ok:has-text("answers")');
    assert.match(await text('.notice-ok'), /“sales” answers: DuckDB v?\d/);

    await page.click(`${row('sales')} button:has-text("Edit")`);
    assert.equal(await page.inputValue('#e-sales-config-row_limit'), '50', 'the saved value is shown');
    await page.fill('#e-sales-config-row_limit', '1');
    await page.click('button:has-text("Save and reconnect")');
    await page.waitForSelector('.notice-ok:has-text("Saved and reconnected")');
    assert.equal((await c.call('GET', `/connections/${saved.id}`)).body.config.row_limit, 1);
    await page.screenshot({ path: path.join(screenshots, 'integrations-connector.png'), fullPage: true });
    assert.deepEqual(problems, []);
  });

  it("Operator Mode lists the connector's tools under its name and in its approvals, with only its kind's connections", async () => {
    await c.call('PATCH', `/connections/${(await c.call('GET', '/connections')).body.data[0].id}`, {
      config: { row_limit: 100 },
    });
    const agent = await createLiveAgent(
      h,
      workspaceId,
      { name: 'Customers', nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }] },
      'draft',
    );
    await page.goto(`${base}/agents/${agent.id}/edit`);
    // The approvals table: Cadre's own tools, and a connector's once the agent has a connection of it.
    const approvable = async () =>
      (await page.evaluate(
        `[...document.querySelectorAll('select[aria-label^="Approval for "]')].map((s) => s.getAttribute('aria-label').slice(13))`,
      )) as string[];
    const before = await approvable();
    assert.ok(before.includes('http.request') && !before.includes('duckdb.query'), before.join(', '));
    await page.check('#e-conn-sales');
    const after = await approvable();
    assert.ok(after.includes('duckdb.query') && !after.includes('sql.insert'), after.join(', '));
    await page.click('.palette button[data-kind="tool"]');
    await page.waitForSelector('#e-tool');
    const group = await page.evaluate(
      `[...document.querySelectorAll('#e-tool optgroup[label="duckdb"] option')].map((o) => o.value)`,
    );
    assert.deepEqual(group, ['duckdb.list_tables', 'duckdb.query']);
    await page.selectOption('#e-tool', 'duckdb.query');
    await page.waitForSelector('#e-connection');
    await page.click('summary:has-text("Advanced: this node as JSON")');
    const node = JSON.parse(await page.inputValue('#e-node'));
    assert.equal(node.arguments.connection, 'sales', 'its one fitting connection is picked');
    node.arguments.sql = 'select name from customers where country = ?';
    node.arguments.params = ['{{country}}'];
    node.save_as = 'found';
    await page.fill('#e-node', JSON.stringify(node, null, 2));
    await page.click('.svelte-flow__node[data-id="in"]');
    await page.waitForSelector('label[for="e-node"]:has-text("Node in")');
    await page.fill('#e-node', JSON.stringify({ kind: 'input', id: 'in', format: 'json', next: node.id }, null, 2));
    await page.click('button:has-text("Save version 2")');
    await page.waitForURL(new RegExp(`/agents/${agent.id}\\?saved=2$`));

    const run = await c.call('POST', `/agents/${agent.id}/test-run`, { input: JSON.stringify([{ country: 'US' }]) });
    assert.ok(run.status < 300, JSON.stringify(run.body));
    const runId = run.body.id;
    for (let i = 0; i < 300; i++) {
      const r = (await c.call('GET', `/runs/${runId}`)).body;
      if (['completed', 'failed'].includes(r.status)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const [item] = await items(h, runId);
    assert.deepEqual((item.data as Json).found.rows, [{ name: 'Globex' }]);
    assert.deepEqual(problems, []);
  });

  it("an event trigger is added from the agent's page, its options drawn from the event's schema", async () => {
    await c.connect(
      'shop',
      'postgres',
      { host: shop.host, port: shop.port, database: shop.database, user: shop.user },
      { password: shop.password },
    );
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'New orders',
      nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }],
    });
    await page.goto(`${base}/agents/${agent.id}`);
    await page.click('summary:has-text("When something happens in a connected system")');
    const sources = (await page.evaluate(
      `[...document.querySelectorAll('#ev-source option')].map((o) => o.value)`,
    )) as string[];
    assert.deepEqual(sources, ['shop|row.created'], 'the events of the workspace’s connections (a warehouse has none)');
    await page.fill('#ev-table', 'orders');
    await page.fill('#ev-column', 'id');
    await page.fill('#ev-interval', '30');
    await page.click('button:has-text("Add event trigger")');
    await page.waitForSelector('.notice-ok:has-text("Event trigger added")');
    const card = 'ul.triggers li:has-text("row.created on shop")';
    await page.waitForSelector(card);
    assert.match(await text(card), /event\s+row\.created on shop/i);
    assert.match(await text(card), /polls shop for row\.created every 30 s/);
    const [trigger] = (await c.call('GET', `/agents/${agent.id}/triggers`)).body.data;
    assert.deepEqual(
      [trigger.kind, trigger.config.options, trigger.config.poll_interval_seconds, trigger.config.on_resume],
      // The re-read window for rows committed late keeps its default (10 minutes).
      ['event', { table: 'orders', column: 'id', late_commit_seconds: 600 }, 30, 'skip_missed'],
    );
    await page.screenshot({ path: path.join(screenshots, 'agent-event-trigger.png'), fullPage: true });
    assert.deepEqual(problems, []);
  });
});
