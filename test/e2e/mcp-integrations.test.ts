// Integrations and Operator Mode with an MCP server, in a real browser against the real stack and a real help desk
// speaking the Model Context Protocol over streamable HTTP: an admin connects it (a wrong token first, refused with the
// server's reason), the token never reaches the page, Test lists the server's tools; an editor ticks the connection
// for an agent, picks one of its tools for a tool node and gives a model step all of them. A stdio server is picked
// from those the operator declares, never typed as a command. Screenshots go to test-output/screenshots (ignored by
// git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { addMember, createUser } from '../../db/accounts';
import { createConnection } from '../../db/connections';
import { secretBox } from '../../db/secret-box';
import { startHelpDesk, type HelpDesk } from '../fakes/mcp-servers';
import { launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, type Harness } from '../support/harness';
import { checkedFetch } from '../support/openapi-check';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers checked against the document

const shots = screenshots;

describe('Integrations in a browser: connecting an MCP server, and an agent calling its tools', function () {
  this.timeout(300_000);
  let h: Harness;
  let desk: HelpDesk;
  let server: Server;
  let base = '';
  let browser: Browser;
  let page: Page;
  let workspaceId = '';
  let key = '';
  const admin = { email: `ada-${randomUUID().slice(0, 6)}@example.test`, password: 'ada password 12' };
  const problems: string[] = [];
  const secrets = secretBox('mcp-integrations');
  // The operator's stdio servers: a calculator (the fake server, by path: its directory has no node_modules).
  const stdioDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-mcp-servers-'));
  fs.chmodSync(stdioDir, 0o711); // a server running as nobody reaches its directory by this path
  const mcpStdio = {
    stdioServers: {
      calc: {
        command: process.execPath,
        args: [
          '--import',
          pathToFileURL(require.resolve('tsx')).href,
          path.join(__dirname, '../fakes/mcp-stdio-server.ts'),
        ],
        env: {},
        description: 'Adds numbers',
      },
    },
    stdioUser: 'nobody',
    stdioDir,
  };

  before(async function () {
    browser = await launchBrowser(this);

    [h, desk] = await Promise.all([createHarness({ worker: false }), startHelpDesk()]);
    const t = await createTestWorkspace(h);
    workspaceId = t.workspace.id;
    key = t.key;
    const user = await createUser(h.stack.knex, admin);
    await addMember(h.stack.knex, workspaceId, user.id, 'admin');

    // the help desk listens on this machine
    ({ server, base } = await startWebWithConsole(h, {
      secrets,
      connectors: { allowHosts: ['127.0.0.1'], mcpStdio },
    }));

    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => problems.push(e.message));
  });

  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
    await desk?.close();
    fs.rmSync(stdioDir, { recursive: true, force: true });
  });

  const shot = (name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  const text = (selector = 'main') => page.innerText(selector);
  const row = (name: string) => `tr[data-connection="${name}"]`;
  const api = async (method: string, url: string): Promise<{ status: number; body: Json }> => {
    const res = await checkedFetch(`${base}/v1${url}`, { method, headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: await res.json() };
  };

  async function signIn(next: string) {
    await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
    await page.fill('#email', admin.email);
    await page.fill('#password', admin.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(new RegExp(`${next}$`));
  }

  it('an admin connects the help desk (a wrong token is refused with the reason) and Test lists its tools', async () => {
    await signIn('/integrations');
    const wrong = `wrong-${randomUUID().slice(0, 8)}`;
    await page.fill('#c-name', 'helpdesk');
    await page.selectOption('#c-kind', 'mcp');
    await page.waitForSelector('#c-url');
    assert.equal(await page.$('#c-host'), null, 'the SQL settings are gone');
    await page.fill('#c-url', desk.url);
    await page.fill('#c-header-name-0', 'Authorization');
    await page.fill('#c-header-value-0', `Bearer ${wrong}`);
    await page.click('button:has-text("Connect")');
    await page.waitForSelector('.connect .notice-error');
    const refusal = await text('.connect .notice-error');
    assert.match(refusal, new RegExp(`could not connect to mcp at ${desk.url.replace(/\./g, '\\.')}: .*unauthorized`));
    // What was typed stays, but the header's value.
    assert.equal(await page.inputValue('#c-name'), 'helpdesk');
    assert.equal(await page.inputValue('#c-kind'), 'mcp');
    assert.equal(await page.inputValue('#c-url'), desk.url);
    assert.equal(await page.inputValue('#c-header-name-0'), 'Authorization');
    assert.equal(await page.inputValue('#c-header-value-0'), '');
    assert.ok(!(await page.content()).includes(wrong), 'the refused token is not in the page');
    assert.equal((await api('GET', '/connections')).body.data.length, 0, 'nothing was saved');
    await shot('integrations-mcp-refused');

    await page.fill('#c-header-value-0', `Bearer ${desk.token}`);
    await page.click('button:has-text("Connect")');
    await page.waitForSelector(row('helpdesk'));
    assert.match(await text('.notice-ok'), /Connected “helpdesk”/);
    const listed = await text(row('helpdesk'));
    assert.match(listed, /MCP server/);
    assert.ok(listed.includes(desk.url), 'the row shows the URL');
    assert.match(listed, /over HTTP/);
    assert.doesNotMatch(listed, /database/);
    assert.match(listed, /Connected/);
    assert.ok(!(await page.content()).includes(desk.token), 'the token is never in the page');

    await page.click(`${row('helpdesk')} button:has-text("Test")`);
    await page.waitForSelector('.notice-ok:has-text("answers")');
    assert.match(await text('.notice-ok'), /“helpdesk” answers: help-desk 2\.1\.0/);
    assert.deepEqual(
      await page.evaluate(`[...document.querySelectorAll('.offered li')].map((li) => li.textContent.trim())`),
      ['lookup_customer', 'create_ticket'],
    );
    assert.ok(!(await page.content()).includes(desk.token), 'nor after a test');
    await shot('integrations-mcp');

    // Editing shows the URL but no header value; saving with blank values keeps the saved token.
    await page.click(`${row('helpdesk')} button:has-text("Edit")`);
    assert.equal(await page.inputValue('#e-helpdesk-url'), desk.url);
    assert.equal(await page.inputValue('#e-helpdesk-header-value-0'), '');
    await page.click('button:has-text("Save and reconnect")');
    await page.waitForSelector('.notice-ok:has-text("Saved and reconnected")');
    assert.match(await text(row('helpdesk')), /Connected/);
    assert.ok(!(await page.content()).includes(desk.token));
    assert.deepEqual(problems, []);
  });

  it("Operator Mode: a tool node picks one of the server's tools, an llm node gets all of them", async () => {
    const agent = await createLiveAgent(
      h,
      workspaceId,
      { name: 'Customer lookup', nodes: [{ kind: 'input', id: 'in', format: 'lines', next: null }] },
      'draft',
    );
    await page.goto(`${base}/agents/${agent.id}/edit`);
    await page.click('.palette button[data-kind="tool"]');
    await page.waitForSelector('#e-tool');
    const offered = () => page.evaluate(`[...document.querySelectorAll('#e-tool option')].map((o) => o.value)`);
    assert.ok(!((await offered()) as string[]).some((n) => n.startsWith('mcp.')), 'not before the agent lists it');

    await page.check('#e-conn-helpdesk');
    const withServer = (await offered()) as string[];
    assert.ok(withServer.includes('mcp.helpdesk.lookup_customer'), withServer.join(', '));
    assert.ok(withServer.includes('mcp.helpdesk.create_ticket'));
    await page.selectOption('#e-tool', 'mcp.helpdesk.lookup_customer');
    await page.waitForSelector('ul[aria-label="Arguments of mcp.helpdesk.lookup_customer"]');
    assert.match(await text('.picker'), /A customer's plan and open tickets\./);
    assert.match(await text('ul[aria-label="Arguments of mcp.helpdesk.lookup_customer"]'), /customer\s+text, required/);
    assert.equal(await page.$('#e-connection'), null, 'an MCP tool names its server: no connection to pick');
    await page.selectOption('#e-tool', 'mcp.helpdesk.create_ticket');
    assert.match(await text('ul[aria-label="Arguments of mcp.helpdesk.create_ticket"]'), /customer[\s\S]*subject/);
    await page.selectOption('#e-tool', 'mcp.helpdesk.lookup_customer');

    await page.click('summary:has-text("Advanced: this node as JSON")');
    const node = JSON.parse(await page.inputValue('#e-node'));
    assert.equal(node.tool, 'mcp.helpdesk.lookup_customer');
    assert.deepEqual(node.arguments, { customer: '' }, 'the required argument, blank to fill in');
    node.arguments.customer = '{{text}}';
    node.save_as = 'customer';
    node.next = 'llm-1';
    await page.fill('#e-node', JSON.stringify(node, null, 2));

    // A model step offered the whole server, ticked in a list.
    await page.click('.palette button[data-kind="llm"]');
    await page.waitForSelector('label[for="e-node"]:has-text("Node llm-1")');
    await page.check('input[id="e-llm-mcp.helpdesk.create_ticket"]');
    assert.deepEqual(JSON.parse(await page.inputValue('#e-node')).tools, ['mcp.helpdesk.create_ticket']);
    await page.check('input[id="e-llm-mcp.helpdesk"]');
    assert.deepEqual(JSON.parse(await page.inputValue('#e-node')).tools, ['mcp.helpdesk'], 'the whole server instead');
    assert.equal(await page.$('input[id="e-llm-mcp.helpdesk.create_ticket"]'), null);
    await shot('agent-editor-mcp');

    await page.click('.svelte-flow__node[data-id="in"]');
    await page.waitForSelector('label[for="e-node"]:has-text("Node in")');
    await page.fill('#e-node', JSON.stringify({ kind: 'input', id: 'in', format: 'lines', next: node.id }, null, 2));
    await page.click('button:has-text("Save version 2")');
    await page.waitForURL(new RegExp(`/agents/${agent.id}\\?saved=2$`));

    const version = (await api('GET', `/agents/${agent.id}/versions/2`)).body;
    assert.deepEqual(version.spec.connections, ['helpdesk']);
    const saved = version.spec.nodes.find((n: { id: string }) => n.id === node.id);
    assert.equal(saved.tool, 'mcp.helpdesk.lookup_customer');
    assert.deepEqual(saved.arguments, { customer: '{{text}}' });
    assert.equal(saved.next, 'llm-1');
    assert.deepEqual(version.spec.nodes.find((n: { id: string }) => n.id === 'llm-1').tools, ['mcp.helpdesk']);
    assert.deepEqual(problems, []);
  });

  it('a stdio server is picked from those the operator declares; a stored command is shown and replaced', async () => {
    await page.goto(`${base}/integrations`);
    await page.fill('#c-name', 'calc');
    await page.selectOption('#c-kind', 'mcp');
    await page.waitForSelector('#c-transport');
    await page.selectOption('#c-transport', 'stdio');
    await page.waitForSelector('#c-server');
    assert.equal(await page.$('#c-command'), null, 'no command to type');
    assert.equal(await page.$('#c-args'), null, 'nor arguments');
    assert.deepEqual(
      await page.evaluate(
        `[...document.querySelectorAll('#c-server option')].map((o) => [o.value, o.textContent.trim()])`,
      ),
      [
        ['', 'Choose a server'],
        ['calc', 'calc — Adds numbers'],
      ],
    );
    await page.selectOption('#c-server', 'calc');
    await page.click('button:has-text("Connect")');
    await page.waitForSelector(row('calc'));
    const listed = await text(row('calc'));
    assert.match(listed, /calc/);
    assert.match(listed, /a server the operator declares \(stdio\)/);
    assert.ok(!listed.includes('--import'), 'the command line is not shown');
    await page.click(`${row('calc')} button:has-text("Test")`);
    await page.waitForSelector('.notice-ok:has-text("answers")');
    assert.match(await text('.notice-ok'), /“calc” answers: calculator 1\.0\.0/);
    assert.deepEqual((await api('GET', '/connections')).body.data.find((c: Json) => c.name === 'calc').config, {
      transport: 'stdio',
      server: 'calc',
    });

    // One made when a connection could name a command: it says so, and the edit form asks for a server instead.
    await createConnection(h.stack.knex, {
      workspace_id: workspaceId,
      name: 'old',
      kind: 'mcp',
      config: { transport: 'stdio', command: 'npx', args: ['-y', 'some-mcp-server'] },
      credentials_sealed: secrets.seal(JSON.stringify({ headers: {} })),
      created_by: 'test',
    });
    await page.goto(`${base}/integrations`);
    assert.match(await text(row('old')), /npx -y some-mcp-server[\s\S]*no longer allowed/);
    await page.click(`${row('old')} button:has-text("Test")`);
    await page.waitForSelector('.notice-error');
    assert.match(await text('.notice-error'), /names a command \("npx"\), which connections may no longer choose/);
    await page.click(`${row('old')} button:has-text("Reconnect")`);
    await page.waitForSelector('#e-old-server');
    assert.match(
      await text('form[aria-label="Edit old"]'),
      /names the command npx -y some-mcp-server, which no longer runs/,
    );
    await shot('integrations-mcp-stdio');
    await page.selectOption('#e-old-server', 'calc');
    await page.click('form[aria-label="Edit old"] button:has-text("Save and reconnect")');
    await page.waitForSelector('.notice-ok:has-text("Saved and reconnected")');
    assert.match(await text(row('old')), /Connected/);
    assert.deepEqual((await api('GET', '/connections')).body.data.find((c: Json) => c.name === 'old').config, {
      transport: 'stdio',
      server: 'calc',
    });
    assert.deepEqual(problems, []);
  });
});
