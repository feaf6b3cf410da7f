// The workflow editor (Operator Mode) in a real browser against the real stack: a person builds the route-invoices
// example (examples/route-csv-rows.json) from a new agent on the canvas without typing JSON (nodes from the palette,
// connected by dragging from one node's exit to another node, the branch's condition by form), deletes and undoes,
// sees a validation problem named by node and field, is warned before leaving with unsaved changes, saves, and runs
// the agent to completion. A tool's arguments that are objects or lists (headers, a webhook's body, a state value, a
// file's rows, HubSpot's filters) are edited as rows, entries and fields, on a phone too, with no JSON box.
// Screenshots go to test-output/screenshots (ignored by git).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { addMember, createUser } from '../../db/accounts';
import { loadSecretBox } from '../../db/secret-box';
import { agentSpecSchema } from '../../model/agent';
import { hydrated, launchBrowser, screenshots, startWebWithConsole, type Browser, type Page } from '../support/browser';
import { createHarness, createLiveAgent, createTestWorkspace, type Harness } from '../support/harness';

/** What this suite uses of playwright-core beyond the shared subset: the mouse, for dragging between handles. */
type EditorPage = Page & {
  mouse: {
    move(x: number, y: number, options?: { steps?: number }): Promise<void>;
    down(): Promise<void>;
    up(): Promise<void>;
  };
  press(selector: string, key: string): Promise<void>;
  keyboard: { press(key: string): Promise<void> };
  goBack(): Promise<unknown>;
  close(): Promise<void>;
};

describe('the workflow editor in a browser', function () {
  this.timeout(300_000);
  let h: Harness;
  let browser: Browser;
  let server: Server;
  let base = '';
  let page: EditorPage;
  let workspaceId = '';
  const editor = { email: `ed-${randomUUID().slice(0, 6)}@example.test`, password: 'editor password 12' };
  const problems: string[] = [];
  /** What the next confirm() answers: leave (true) or stay (false); the messages asked, in order. */
  let leave = false;
  const asked: string[] = [];

  before(async function () {
    browser = await launchBrowser(this);
    h = await createHarness();
    const t = await createTestWorkspace(h);
    workspaceId = t.workspace.id;
    const user = await createUser(h.stack.knex, editor);
    await addMember(h.stack.knex, t.workspace.id, user.id, 'editor');
    ({ server, base } = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) }));
    page = (await browser.newPage({ viewport: { width: 1366, height: 900 } })) as EditorPage;
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('dialog', (d) => {
      asked.push(d.message());
      void (leave ? d.accept() : (d as unknown as { dismiss(): Promise<void> }).dismiss());
    });
  });
  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await h?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(screenshots, `${name}.png`), fullPage: true });
  const frames = () => page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');

  /** The centre of an element on screen. */
  async function centre(selector: string) {
    await page.waitForSelector(selector);
    await frames(); // the canvas lays itself out again (and fits the view) after each change
    return (await page.evaluate(
      `(() => { const r = document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect();
        return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`,
    )) as { x: number; y: number };
  }

  /** Drags from a node's exit handle to another node's entry, as a person connects two nodes. */
  async function drag(from: string, exit: string, to: string) {
    const a = await centre(`.svelte-flow__handle[data-nodeid="${from}"][data-handleid="${exit}"]`);
    const b = await centre(`.svelte-flow__handle[data-nodeid="${to}"][data-handleid="in"]`);
    await page.mouse.move(a.x, a.y);
    await page.mouse.down();
    await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 5 });
    await page.mouse.move(b.x, b.y, { steps: 5 });
    await page.mouse.up();
    // The edge drawn, and the node's exit in the spec: the edge's label names both ends.
    await page.waitForFunction(
      `document.querySelector('.svelte-flow__edge[data-id="${from}:${exit}"]')?.getAttribute('aria-label')?.endsWith(' to ${to}')`,
    );
  }

  /** Selects a node on the canvas; its form opens below. */
  async function open(id: string) {
    await page.click(`.svelte-flow__node[data-id="${id}"]`);
    await page.waitForSelector(`[aria-label="Settings of node ${id}"]`);
  }

  /** Renames the open node through its form, as a person types a name and leaves the field. */
  async function rename(to: string) {
    await page.fill('#n-id', to);
    await page.press('#n-id', 'Tab');
    await page.waitForSelector(`.svelte-flow__node[data-id="${to}"]`);
  }

  /** Adds a node from the palette and names it. */
  async function add(kind: string, id: string) {
    await page.click(`.palette button[data-kind="${kind}"]`);
    await page.waitForSelector(`[aria-label^="Settings of node ${kind.replace(/_/g, '-')}-"]`);
    await rename(id);
  }

  it('builds the route-invoices agent on the canvas, without JSON, saves it and runs it to completion', async () => {
    await page.goto(`${base}/login?next=%2Fagents`);
    await page.fill('#email', editor.email);
    await page.fill('#password', editor.password);
    await page.click('button:has-text("Sign in")');
    await page.waitForURL(/\/agents$/);
    await hydrated(page);
    await page.fill('#a-name', 'Route invoice rows');
    await page.fill(
      '#a-description',
      'Cleans CSV rows of invoices, flags the large ones for a person and writes the rest to a CSV report. Needs no model.',
    );
    await page.click('button:has-text("Create and edit")');
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}\/edit$/);
    const agentId = /\/agents\/([0-9a-f-]{36})/.exec(page.url())![1];
    await hydrated(page);
    await page.fill(
      '#e-instructions',
      'For each invoice row: normalise the amount to a number, send invoices over 10,000 to a reviewer, and collect all others in a report.',
    );

    // The two nodes a new agent starts with: its input (CSV rows) and its output (the report).
    await open('input');
    await page.selectOption('#n-format', 'csv');
    await rename('rows');
    await open('output');
    await rename('report');
    await page.fill('#n-file_name', 'routed-invoices.csv');

    // A transform that makes the amount a number and keeps the vendor, by rows of its form.
    await add('transform', 'clean');
    // Its common case first: Set fields, then Rename and Convert, with Drop after them.
    const transformForm = await page.innerText('.node-form');
    const [setAt, dropAt] = [transformForm.indexOf('Set fields'), transformForm.indexOf('Drop')];
    assert.ok(setAt >= 0 && setAt < dropAt, `Set fields before Drop: ${transformForm}`);
    await page.click('#n-cast-add');
    await page.fill('#n-cast-key-0', 'amount');
    await page.selectOption('#n-cast-value-0', 'number');
    await page.click('#n-set-add');
    await page.fill('#n-set-key-0', 'vendor');
    await page.fill('#n-set-value-0', '{{vendor}}');

    // The branch, and the review it sends large invoices to.
    await add('branch', 'route');
    await page.fill('#n-b0-field-0', 'amount');
    await page.selectOption('#n-b0-op-0', 'gt');
    await add('flag_for_review', 'review');
    await page.fill('#n-reason', 'invoice {{invoice}} from {{vendor}} is over 10,000');

    // Deleted by the keyboard, back with Undo, gone again with Redo; then deleted for good from its form.
    await add('approval', 'stray');
    await page.click('.svelte-flow__node[data-id="stray"]');
    await page.keyboard.press('Delete');
    await page.waitForSelector('.svelte-flow__node[data-id="stray"]', { state: 'detached' });
    await page.click('button:has-text("Undo")');
    await page.waitForSelector('.svelte-flow__node[data-id="stray"]');
    await page.click('button:has-text("Redo")');
    await page.waitForSelector('.svelte-flow__node[data-id="stray"]', { state: 'detached' });
    await page.click('button:has-text("Undo")');
    await open('stray');
    await page.click('button:has-text("Delete node")');
    await page.waitForSelector('.svelte-flow__node[data-id="stray"]', { state: 'detached' });

    // Connected by dragging from each exit to the next node.
    await drag('rows', 'next', 'clean');
    await drag('clean', 'next', 'route');
    await drag('route', 'branch-0', 'review');
    await drag('route', 'otherwise', 'report');
    await shot('editor-canvas-built');

    // Saving with the condition's value left out: refused on the page, naming the node and the field.
    await page.click('button:has-text("Save version 2")');
    await page.waitForSelector('#problems');
    const said = await page.innerText('#problems');
    assert.match(said, /Node 'route' → Branch 1, condition 1: value is required/);
    assert.doesNotMatch(said, /Too small|expected|position/);
    assert.match(page.url(), /\/edit$/, 'not sent');
    await shot('editor-problem');
    await open('route');
    await page.fill('#n-b0-value-0', '10000');
    await page.waitForSelector('#problems', { state: 'detached' });

    // The Advanced view is the same node: the form's condition is in its JSON, and a change there shows in the form.
    await page.click('summary:has-text("Advanced: this node as JSON")');
    const routeJson = JSON.parse(await page.inputValue('#e-node'));
    assert.deepEqual(routeJson.branches[0].when, { field: 'amount', op: 'gt', value: 10000 });
    assert.match(await page.innerText('.svelte-flow__node[data-id="route"]'), /if amount > 10000/);

    // Leaving with unsaved changes asks first; staying keeps every change on screen.
    leave = false;
    await page.click('a:has-text("Cancel")');
    assert.match(asked.at(-1) ?? '', /changes that are not saved/);
    assert.match(page.url(), /\/edit$/);
    await page.waitForSelector('.svelte-flow__node[data-id="review"]');

    // Saved exactly as on screen: the example's workflow, node for node.
    await page.click('button:has-text("Save version 2")');
    await page.waitForURL(new RegExp(`/agents/${agentId}\\?saved=2$`));
    const example = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', 'examples', 'route-csv-rows.json'), 'utf8'),
    );
    const saved = await h.stack.knex('agents').where({ id: agentId, workspace_id: workspaceId }).first();
    const version = await h.stack.knex('agent_versions').where({ agent_id: agentId, version: 2 }).first();
    const spec = typeof version.spec === 'string' ? JSON.parse(version.spec) : version.spec;
    assert.equal(saved.current_version, 2);
    // Node for node, in any order; an exit to nowhere is the same left out or null.
    const nodesOf = (s: unknown) =>
      agentSpecSchema
        .parse(s)
        .nodes.map((n) => JSON.parse(JSON.stringify(n, (k, v) => (v === null ? undefined : v))))
        .sort((a, b) => a.id.localeCompare(b.id));
    assert.deepEqual(nodesOf(spec), nodesOf(example));
    await shot('editor-saved-agent');

    // The diagram on the agent page shows the branch's whole condition, not cut by a node.
    assert.match(await page.innerText('main'), /if amount > 10000/);

    // Run it (a test run of the draft) and see it complete.
    await page.fill('#run-input', 'invoice,vendor,amount\nINV-1,Acme,120\nINV-2,Globex,9800');
    await page.click('.run-form button');
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const deadline = Date.now() + 90_000;
    while (!/Completed/.test(await page.innerText('main'))) {
      assert.ok(Date.now() < deadline, `the run did not complete: ${(await page.innerText('main')).slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 500));
      await page.goto(page.url());
    }
    assert.match(await page.innerText('main'), /routed-invoices\.csv/);
    // The report's rows read as named values, not as JSON.
    const outputs = await page.innerText('.card.output');
    for (const pair of [/invoice\s+INV-1/, /vendor\s+Acme/, /amount\s+120/]) assert.match(outputs, pair);
    assert.doesNotMatch(outputs, /[{}[\]"]/);
    await shot('editor-run-completed');
    assert.deepEqual(problems, [], 'no script errors');
  });

  it('warns before an unsaved edit is lost, and keeps it when the person stays', async () => {
    const [agent] = await h.stack.knex('agents').where({ workspace_id: workspaceId }).select('id');
    leave = true; // whatever the first test left on screen
    await page.goto(`${base}/agents/${agent.id}/edit`);
    await hydrated(page);
    await open('review');
    await page.fill('#n-reason', 'a changed reason');
    leave = false;
    await page.click('a:has-text("Agents")');
    assert.match(asked.at(-1) ?? '', /changes that are not saved/);
    assert.equal(await page.inputValue('#n-reason'), 'a changed reason', 'the edit is still on screen');
    leave = true;
    await page.click('a:has-text("Agents")');
    await page.waitForURL(/\/agents$/);
    const version = await h.stack.knex('agents').where({ id: agent.id }).first();
    assert.equal(version.current_version, 2, 'nothing saved without Save');
  });

  /** Opens a Draft agent of these nodes in the editor, signed in as the editor. */
  async function editNew(name: string, nodes: unknown[]) {
    const agent = await createLiveAgent(h, workspaceId, { name, nodes }, 'draft');
    leave = true; // whatever an earlier test left on screen
    await page.goto(`${base}/agents/${agent.id}/edit`);
    if (page.url().includes('/login')) {
      await page.fill('#email', editor.email);
      await page.fill('#password', editor.password);
      await page.click('button:has-text("Sign in")');
      await page.waitForURL(/\/edit$/);
    }
    await hydrated(page);
    leave = false;
    return agent;
  }
  const savedSpec = async (agentId: string) => {
    const { current_version: version } = await h.stack.knex('agents').where({ id: agentId }).first();
    const row = await h.stack.knex('agent_versions').where({ agent_id: agentId, version }).first();
    return typeof row.spec === 'string' ? JSON.parse(row.spec) : row.spec;
  };
  const save = async (agentId: string) => {
    await page.click('button:has-text("Save version 2")');
    await page.waitForURL(new RegExp(`/agents/${agentId}\\?saved=2$`));
  };

  it("picks a call_agent node's agent from the workspace's agents by name, and keeps its id", async () => {
    const payer = await createLiveAgent(h, workspaceId, {
      name: 'Pay suppliers',
      nodes: [{ kind: 'input', id: 'in', next: null }],
    });
    const caller = await editNew('Hand invoices over', [{ kind: 'input', id: 'rows', format: 'csv', next: null }]);
    await add('call_agent', 'pay');
    const offered = (await page.evaluate(
      `[...document.querySelectorAll('#n-agent_id option')].map((o) => o.textContent.trim())`,
    )) as string[];
    assert.ok(offered.includes('Pay suppliers'), `the agents by name: ${offered.join(' | ')}`);
    assert.ok(!offered.includes('Hand invoices over'), 'not the agent itself (a call to itself is a loop)');
    assert.ok(!offered.some((o) => /^[0-9a-f-]{36}$/.test(o)), 'no ids to read');
    await page.selectOption('#n-agent_id', 'Pay suppliers');
    assert.match(await page.innerText('[aria-label="Settings of node pay"]'), new RegExp(`id ${payer.id}`));
    await page.click('summary:has-text("Advanced: this node as JSON")');
    assert.equal(JSON.parse(await page.inputValue('#e-node')).agent_id, payer.id, 'the node keeps the id');
    await shot('editor-call-agent-picker');
    await open('rows');
    await page.selectOption('#n-next', 'pay');
    await save(caller.id);
    const pay = (await savedSpec(caller.id)).nodes.find((n: { id: string }) => n.id === 'pay');
    assert.equal(pay.agent_id, payer.id);
    assert.deepEqual(problems, [], 'no script errors');
  });

  it('moves the selected node with the arrow keys, keeps it there like a drag, and says so for screen readers', async () => {
    const agent = await editNew('Keyboard moves', [
      { kind: 'input', id: 'rows', format: 'csv', next: 'clean' },
      { kind: 'transform', id: 'clean', set: { checked: true }, next: 'report' },
      { kind: 'output', id: 'report', format: 'csv', file_name: 'report.csv' },
    ]);
    /** Where the canvas draws a node (its top-left corner on the canvas, not on screen). */
    const at = async (id: string) =>
      (await page.evaluate(
        `(() => { const m = /translate\\(([-\\d.]+)px, ?([-\\d.]+)px\\)/.exec(
          document.querySelector('.svelte-flow__node[data-id="${id}"]').style.transform);
          return { x: Math.round(+m[1]), y: Math.round(+m[2]) }; })()`,
      )) as { x: number; y: number };
    const node = '.svelte-flow__node[data-id="clean"]';
    await open('clean');
    const before = await at('clean');
    assert.ok(await page.$('button.arrange[disabled]'), 'laid out automatically so far');
    await page.press(node, 'ArrowRight');
    await page.press(node, 'ArrowRight');
    await page.press(node, 'Shift+ArrowDown');
    const after = await at('clean');
    assert.deepEqual(after, { x: before.x + 40, y: before.y + 100 }, '20 a step, 100 with Shift');
    const said = (await page.evaluate(`document.querySelector('[data-testid="canvas-moved"]').textContent`)) as string;
    assert.equal(said, `Moved node clean down, to x ${after.x}, y ${after.y}.`);
    assert.equal(
      await page.evaluate(`document.querySelector('[data-testid="canvas-moved"]').getAttribute('aria-live')`),
      'polite',
    );

    // Kept like a drag: a change to the workflow does not lay it out again; Arrange does.
    await page.fill('#n-id', 'tidy');
    await page.press('#n-id', 'Tab');
    await page.waitForSelector('.svelte-flow__node[data-id="tidy"]');
    assert.deepEqual(await at('tidy'), after, 'still where it was moved');
    await shot('editor-keyboard-move');
    await page.click('button.arrange');
    await page.waitForFunction(`document.querySelector('button.arrange').disabled`);
    assert.deepEqual(await at('tidy'), before, 'Arrange lays it out again');
    await save(agent.id);
    assert.deepEqual(problems, [], 'no script errors');
  });

  it('edits a nested output schema by form (an object, a list of objects), the same as the Advanced JSON', async () => {
    const agent = await editNew('Read invoices', [
      { kind: 'input', id: 'mail', format: 'json', next: 'extract' },
      { kind: 'llm', id: 'extract', instructions: 'Read the invoice.', next: null },
    ]);
    await open('extract');
    await page.click('#n-schema-add');
    await page.fill('#n-schema-0-name', 'vendor');
    await page.click('#n-schema-add');
    await page.fill('#n-schema-1-name', 'address');
    await page.selectOption('#n-schema-1-type', 'object');
    await page.click('#n-schema-1-f-add');
    await page.fill('#n-schema-1-f-0-name', 'city');
    await page.fill('#n-schema-1-f-0-description', 'where the vendor is');
    await page.click('#n-schema-add');
    await page.fill('#n-schema-2-name', 'lines');
    await page.selectOption('#n-schema-2-type', 'array');
    await page.selectOption('#n-schema-2-items', 'object');
    await page.click('#n-schema-2-f-add');
    await page.fill('#n-schema-2-f-0-name', 'amount');
    await page.selectOption('#n-schema-2-f-0-type', 'number');
    await page.click('#n-schema-2-f-add');
    await page.fill('#n-schema-2-f-1-name', 'note');
    await page.uncheck('#n-schema-2-f-1-required');
    const expected = {
      type: 'object',
      properties: {
        vendor: { type: 'string' },
        address: {
          type: 'object',
          properties: { city: { type: 'string', description: 'where the vendor is' } },
          required: ['city'],
        },
        lines: {
          type: 'array',
          items: {
            type: 'object',
            properties: { amount: { type: 'number' }, note: { type: 'string' } },
            required: ['amount'],
          },
        },
      },
      required: ['vendor', 'address', 'lines'],
    };
    await page.click('summary:has-text("Advanced: this node as JSON")');
    const node = JSON.parse(await page.inputValue('#e-node'));
    assert.deepEqual(node.output_schema, expected, 'the form wrote it');
    await shot('editor-nested-schema');

    // And back: a field added in the JSON shows in the form, nested where it was put.
    const changed = structuredClone(expected);
    Object.assign(changed.properties.address.properties, { country: { type: 'string' } });
    await page.fill('#e-node', JSON.stringify({ ...node, output_schema: changed }, null, 2));
    await page.waitForSelector('#n-schema-1-f-1-name');
    assert.equal(await page.inputValue('#n-schema-1-f-1-name'), 'country');
    assert.equal(await page.isChecked('#n-schema-1-f-1-required'), false);
    assert.equal(await page.inputValue('#n-schema-2-f-0-type'), 'number');

    // A rule rows cannot show (allowed values) keeps the schema in the Advanced JSON, untouched by the form.
    const withEnum = JSON.parse(JSON.stringify(changed));
    withEnum.properties.vendor.enum = ['Acme', 'Globex'];
    await page.fill('#e-node', JSON.stringify({ ...node, output_schema: withEnum }, null, 2));
    await page.waitForSelector('#n-schema-add', { state: 'detached' });
    assert.match(await page.innerText('fieldset.schema'), /rules the form cannot show/);
    await page.fill('#e-node', JSON.stringify({ ...node, output_schema: changed }, null, 2));
    await page.waitForSelector('#n-schema-add');

    await save(agent.id);
    const extract = (await savedSpec(agent.id)).nodes.find((n: { id: string }) => n.id === 'extract');
    assert.deepEqual(extract.output_schema, changed);
    // On the agent page, the schema reads as the form's rows, not as JSON Schema.
    await page.goto(`${base}/agents/${agent.id}`);
    const card = await page.innerText('#node-extract');
    assert.match(card, /vendor: string, required/);
    assert.match(card, /lines: list of object, required/);
    assert.match(card, /^ {2}amount: number, required$/m, "a list's fields indented below it");
    assert.match(card, /^ {2}note: string$/m);
    assert.match(card, /city: string, required \(where the vendor is\)/);
    assert.doesNotMatch(card, /[{}[\]"]/);
    assert.deepEqual(problems, [], 'no script errors');
  });

  it("edits a tool's object and list arguments by form, with no JSON box: headers, a body, a state value, rows", async () => {
    // The notify-webhook example, then two tool nodes added from the palette: a state value and a file's rows.
    const example = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', 'examples', 'notify-webhook.json'), 'utf8'),
    );
    const agent = await editNew(example.name, example.nodes);
    const noJsonBox = async (id: string) =>
      assert.equal((await page.$$(`[aria-label="Settings of node ${id}"] textarea`)).length, 0, `no JSON in ${id}`);

    // Headers: name → value rows, the first added from the keyboard.
    await open('notify');
    await page.press('#n-arg-headers-add', 'Enter');
    await page.fill('#n-arg-headers-key-0', 'X-Source');
    await page.fill('#n-arg-headers-value-0', 'cadre');
    await page.click('#n-arg-headers-add');
    await page.fill('#n-arg-headers-key-1', 'X-Item');
    await page.fill('#n-arg-headers-value-1', '{{id}}');

    // The body (a value of any shape) opens as the fields it has; one renamed, three added, one of them an object.
    assert.equal(await page.inputValue('#n-arg-body-mode'), 'fields');
    assert.equal(await page.inputValue('#n-arg-body-key-0'), 'id');
    assert.equal(await page.inputValue('#n-arg-body-value-1'), '{{amount}}');
    await page.fill('#n-arg-body-key-0', 'invoice');
    await page.click('#n-arg-body-add');
    await page.fill('#n-arg-body-key-2', 'currency');
    await page.fill('#n-arg-body-value-2', 'EUR');
    await page.click('#n-arg-body-add');
    await page.fill('#n-arg-body-key-3', 'urgent');
    await page.fill('#n-arg-body-value-3', 'true');
    await page.click('#n-arg-body-add');
    await page.fill('#n-arg-body-key-4', 'customer');
    await page.selectOption('#n-arg-body-value-4-mode', 'fields');
    await page.click('#n-arg-body-value-4-add');
    await page.fill('#n-arg-body-value-4-key-0', 'name');
    await page.fill('#n-arg-body-value-4-value-0', '{{payee}}');
    await noJsonBox('notify');
    await shot('editor-arguments-by-form');

    // A state value given as fields, a number among them.
    await add('tool', 'remember');
    await page.selectOption('#e-tool', 'state.set');
    await page.fill('#n-arg-key', 'last_large');
    assert.equal(await page.inputValue('#n-arg-value-mode'), 'text', 'an empty value starts as text');
    await page.selectOption('#n-arg-value-mode', 'fields');
    for (const [i, [name, value]] of [
      ['id', '{{id}}'],
      ['amount', '{{amount}}'],
      ['count', '1'],
    ].entries()) {
      await page.click('#n-arg-value-add');
      await page.fill(`#n-arg-value-key-${i}`, name);
      await page.fill(`#n-arg-value-value-${i}`, value);
    }
    await noJsonBox('remember');

    // A file's rows: a list of entries, each of name → value rows.
    await add('tool', 'book');
    await page.selectOption('#e-tool', 'file.generate');
    await page.fill('#n-arg-file_name', 'large-amounts.csv');
    await page.click('#n-arg-rows-add');
    for (const [i, [name, value]] of [
      ['supplier', '{{payee}}'],
      ['amount', '{{amount}}'],
      ['paid', 'false'],
    ].entries()) {
      await page.click('#n-arg-rows-0-add');
      await page.fill(`#n-arg-rows-0-key-${i}`, name);
      await page.fill(`#n-arg-rows-0-value-${i}`, value);
    }
    await noJsonBox('book');
    await page.selectOption('#n-next', 'remember');
    await open('notify');
    await page.selectOption('#n-next', 'book');

    // The Advanced view is the same state: what the form built is there, and a change there shows in the form.
    const body = {
      invoice: '{{id}}',
      amount: '{{amount}}',
      currency: 'EUR',
      urgent: true,
      customer: { name: '{{payee}}' },
    };
    await page.click('summary:has-text("Advanced: this node as JSON")');
    const notifyJson = JSON.parse(await page.inputValue('#e-node'));
    assert.deepEqual(notifyJson.arguments.body, body);
    notifyJson.arguments.body.currency = 'USD';
    await page.fill('#e-node', JSON.stringify(notifyJson, null, 2));
    await page.waitForFunction(`document.querySelector('#n-arg-body-value-2').value === 'USD'`);
    await page.fill('#n-arg-body-value-2', 'EUR');

    await save(agent.id);
    const saved = (await page.evaluate(`fetch('/v1/agents/${agent.id}').then((r) => r.json())`)) as {
      current_version: number;
      spec: { nodes: { id: string; arguments?: unknown }[] };
    };
    assert.equal(saved.current_version, 2);
    const argumentsOf = (id: string) => saved.spec.nodes.find((n) => n.id === id)?.arguments;
    assert.deepEqual(argumentsOf('notify'), {
      method: 'POST',
      url: 'https://example.com/finance-webhook',
      body,
      headers: { 'X-Source': 'cadre', 'X-Item': '{{id}}' },
    });
    assert.deepEqual(argumentsOf('remember'), {
      key: 'last_large',
      value: { id: '{{id}}', amount: '{{amount}}', count: 1 },
    });
    assert.deepEqual(argumentsOf('book'), {
      file_name: 'large-amounts.csv',
      rows: [{ supplier: '{{payee}}', amount: '{{amount}}', paid: false }],
    });

    // Read back as they were typed, on the agent page and in the version history: named values and entries, a
    // condition in words, never JSON (braces here are only the {{field}} templates).
    const noJson = (text: string, where: string) =>
      assert.doesNotMatch(text.replace(/\{\{[^}]*\}\}/g, ''), /[{}[\]"]/, `${where} shows JSON: ${text}`);
    await page.goto(`${base}/agents/${agent.id}`);
    const notifyCard = await page.innerText('#node-notify');
    assert.match(notifyCard, /customer\s+name\s+\{\{payee\}\}/);
    // (In the order the database keeps an object's keys.)
    assert.match(notifyCard, /headers\s+(X-Item\s+\{\{id\}\}\s+)?X-Source\s+cadre/);
    noJson(notifyCard, 'the notify node');
    const bookCard = await page.innerText('#node-book');
    for (const pair of [/rows\s+(1\.\s+)?\w+/, /supplier\s+\{\{payee\}\}/, /paid\s+no/]) assert.match(bookCard, pair);
    noJson(await page.innerText('ol.nodes'), 'the nodes');
    await page.goto(`${base}/agents/${agent.id}/versions?from=1&to=2`);
    const changes = await page.innerText('ul.changes');
    assert.match(changes, /Node 'notify' → Arguments: headers\s+(X-Item\s+\{\{id\}\}\s+)?X-Source\s+cadre/);
    // A body's own field is named as it is, not as the node's setting of the same name.
    assert.match(changes, /Node 'notify' → Arguments: body → id\s+\{\{id\}\}/);
    const added = changes.slice(changes.indexOf("Node 'remember'"));
    for (const pair of [/key\s+last_large/, /count\s+1/, /tool\s+state\.set/]) assert.match(added, pair);
    noJson(changes, 'the version history');
    await shot('editor-versions-values-in-words');
    assert.deepEqual(problems, [], 'no script errors');
  });

  it("draws a tool's arguments on a phone: labelled for axe-core, nothing wider than the screen", async () => {
    const agent = await editNew('Invoice a customer', [
      { kind: 'input', id: 'rows', format: 'csv', next: 'invoice' },
      {
        kind: 'tool',
        id: 'invoice',
        tool: 'hubspot.find',
        arguments: {
          type: 'contacts',
          filters: [{ property: 'email', operator: 'EQ', value: '{{email}}' }],
          sort: { property: 'createdate' },
          properties: ['email', 'firstname'],
        },
        next: 'keep',
      },
      // A value of no set shape given as text, and a list given as a template that holds the whole list.
      { kind: 'tool', id: 'keep', tool: 'state.set', arguments: { key: 'last', value: '{{email}}' }, next: 'invite' },
      {
        kind: 'tool',
        id: 'invite',
        tool: 'calendar.create_event',
        arguments: { title: 'Onboarding', attendees: '{{attendees}}' },
      },
    ]);
    // A page of its own context at 390 px (axe-core analyses pages of contexts made by newContext).
    const context = await (
      browser as unknown as {
        newContext(o: object): Promise<{ newPage(): Promise<EditorPage>; close(): Promise<void> }>;
      }
    ).newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const phone = await context.newPage();
    phone.on('pageerror', (e) => problems.push(e.message));
    /** The node's form fits the screen and axe-core finds nothing serious in it. */
    async function fitsAndLabelled(id: string) {
      const form = `[aria-label="Settings of node ${id}"]`;
      const overflow = (await phone.evaluate(
        `(() => { const f = document.querySelector('${form}'); return f.scrollWidth - f.clientWidth; })()`,
      )) as number;
      assert.ok(overflow <= 0, `the form of ${id} fits the screen (${overflow} px too wide)`);
      const results = await new AxeBuilder({
        page: phone as unknown as ConstructorParameters<typeof AxeBuilder>[0]['page'],
      })
        .include(form)
        .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'])
        .analyze();
      const serious = results.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id}: ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(' | ')}`);
      assert.deepEqual(serious, [], `axe-core violations in ${id}:\n${serious.join('\n')}`);
    }
    const openOnPhone = async (id: string) => {
      await phone.click(`.svelte-flow__node[data-id="${id}"]`);
      await phone.waitForSelector(`[aria-label="Settings of node ${id}"]`);
    };
    try {
      await phone.goto(`${base}/login?next=${encodeURIComponent(`/agents/${agent.id}/edit`)}`);
      await hydrated(phone);
      await phone.fill('#email', editor.email);
      await phone.fill('#password', editor.password);
      await phone.click('button:has-text("Sign in")');
      await phone.waitForURL(/\/edit$/);
      await hydrated(phone);
      await openOnPhone('invoice');
      // A list of objects as entries with a field each, its enum a choice; an object's fields; a list of texts.
      assert.equal(await phone.inputValue('#n-arg-filters-0-property'), 'email');
      assert.equal(await phone.inputValue('#n-arg-filters-0-operator'), 'EQ');
      assert.equal(await phone.inputValue('#n-arg-sort-property'), 'createdate');
      assert.equal(await phone.inputValue('#n-arg-sort-direction'), 'ASCENDING', "the tool's default, shown");
      assert.equal(await phone.inputValue('#n-arg-properties-1'), 'firstname');
      await phone.click('#n-arg-filters-add');
      await phone.waitForSelector('#n-arg-filters-1-property');
      await fitsAndLabelled('invoice');
      await phone.screenshot({ path: path.join(screenshots, 'editor-arguments-phone.png'), fullPage: true });

      await openOnPhone('keep');
      assert.equal(await phone.inputValue('#n-arg-value-mode'), 'text');
      assert.equal(await phone.inputValue('#n-arg-value'), '{{email}}');
      await fitsAndLabelled('keep');

      // The template stays as it is, with a way to fill the list in entry by entry instead.
      await openOnPhone('invite');
      assert.equal(await phone.inputValue('#n-arg-attendees'), '{{attendees}}');
      await fitsAndLabelled('invite');
      await phone.click('#n-arg-attendees-form');
      await phone.click('#n-arg-attendees-add');
      await phone.fill('#n-arg-attendees-0', 'ada@example.com');
      await phone.click('summary:has-text("Advanced: this node as JSON")');
      assert.deepEqual(JSON.parse(await phone.inputValue('#e-node')).arguments.attendees, ['ada@example.com']);

      // The tools' approvals in words, their table scrolled within its own box: the page itself is not wider than
      // the screen.
      const approvals = await phone.evaluate(
        `[...document.querySelectorAll('select[aria-label^="Approval for "] option')].map((o) => o.textContent.trim())`,
      );
      assert.ok((approvals as string[]).includes('as usual (asks)'), JSON.stringify(approvals));
      const pageOverflow = (await phone.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      )) as number;
      assert.ok(pageOverflow <= 0, `the editor page is ${pageOverflow} px wider than the screen`);
    } finally {
      await context.close();
    }
    assert.deepEqual(problems, [], 'no script errors');
  });

  it('says in plain words which node is not connected, and where to drag, before anything is sent', async () => {
    await editNew('Loose ends', [
      { kind: 'input', id: 'rows', format: 'csv', next: 'report' },
      { kind: 'output', id: 'report', format: 'csv', file_name: 'report.csv' },
    ]);
    await add('transform', 'tidy');
    await page.click('button:has-text("Save version 2")');
    await page.waitForSelector('#problems');
    const said = await page.innerText('#problems');
    assert.match(
      said,
      /Node 'tidy' is not connected: no arrow leads to it.*Drag from the right edge of the node before it/,
    );
    assert.doesNotMatch(said, /cannot be reached|input node/, 'not the graph check in developer words');
    assert.match(page.url(), /\/edit$/, 'not sent');
    await shot('editor-unconnected-node');
    await page.click('#problems button:has-text("Node \'tidy\'")');
    await page.waitForSelector('[aria-label="Settings of node tidy"]');
    await page.click('button:has-text("Delete node")');
    await page.waitForSelector('#problems', { state: 'detached' });
  });

  it('two editors save the same version: the second is told who saved which version, keeps the edit, and reloads', async () => {
    const agent = await editNew('Shared invoices', [
      { kind: 'input', id: 'rows', format: 'csv', next: 'report' },
      { kind: 'output', id: 'report', format: 'csv', file_name: 'report.csv' },
    ]);
    // A second member of the workspace, in a browser of their own, opens the same editor.
    const other = { email: `ed2-${randomUUID().slice(0, 6)}@example.test`, password: 'second editor pw 12' };
    const user = await createUser(h.stack.knex, other);
    await addMember(h.stack.knex, workspaceId, user.id, 'editor');
    const second = (await browser.newPage({ viewport: { width: 1366, height: 768 } })) as EditorPage;
    second.on('pageerror', (e) => problems.push(e.message));
    try {
      await second.goto(`${base}/login?next=${encodeURIComponent(`/agents/${agent.id}/edit`)}`);
      await second.fill('#email', other.email);
      await second.fill('#password', other.password);
      await second.click('button:has-text("Sign in")');
      await second.waitForURL(/\/edit$/);
      await hydrated(second);

      // Both change the agent; this page saves first.
      await page.fill('#e-instructions', 'Mine: collect every row.');
      await second.fill('#e-instructions', 'Theirs: collect only paid rows.');
      await save(agent.id);
      assert.equal((await savedSpec(agent.id)).instructions, 'Mine: collect every row.');

      // The second save is refused, naming who saved which version; nothing of it is written over the first.
      await second.click('button:has-text("Save version 2")');
      await second.waitForSelector('[role="alert"]:has-text("Not saved")');
      const said = await second.innerText('[role="alert"]:has-text("Not saved")');
      assert.match(said, new RegExp(`version 2 was saved by ${editor.email} after you opened version 1`));
      assert.equal(await second.inputValue('#e-instructions'), 'Theirs: collect only paid rows.', 'the edit is kept');
      await second.screenshot({ path: path.join(screenshots, 'editor-save-conflict.png'), fullPage: true });
      // Pressed again, still refused: the page remembers the version the edit started from.
      await second.click('button:has-text("Save version 2")');
      await second.waitForSelector('[role="alert"]:has-text("Not saved")');
      const row = await h.stack.knex('agents').where({ id: agent.id }).first();
      assert.equal(row.current_version, 2, 'no version saved over the first');
      assert.equal((await savedSpec(agent.id)).instructions, 'Mine: collect every row.');

      // Offered the newest version: loaded, the first editor's change is on screen and the next save makes 3.
      await second.click('button:has-text("Load version 2")');
      await second.waitForURL(new RegExp(`/agents/${agent.id}/edit$`));
      await hydrated(second);
      assert.equal(await second.inputValue('#e-instructions'), 'Mine: collect every row.');
      await second.fill('#e-instructions', 'Mine and theirs: collect every row, paid ones first.');
      await second.click('.svelte-flow__node[data-id="report"]');
      await second.fill('#n-id', 'summary');
      await second.press('#n-id', 'Tab');
      await second.waitForSelector('.svelte-flow__node[data-id="summary"]');
      await second.click('button:has-text("Save version 3")');
      await second.waitForURL(new RegExp(`/agents/${agent.id}\\?saved=3$`));

      // The history says who saved each version, and names each change as the editor does, not by its JSON path.
      await second.goto(`${base}/agents/${agent.id}/versions?from=2&to=3`);
      const history = await second.innerText('main');
      assert.match(history, new RegExp(`v3 current.*by ${other.email}`, 's'));
      assert.match(history, new RegExp(`v2.*by ${editor.email}`, 's'));
      assert.match(history, /Node 'rows' → Then items go to\s+report\s+summary/);
      assert.match(history, /Node 'summary' → Name on the canvas/);
      assert.match(history, /Instructions\s+Mine: collect every row\./);
      assert.doesNotMatch(history, /nodes\[\d\]/);
      await second.screenshot({ path: path.join(screenshots, 'editor-versions-in-words.png'), fullPage: true });
    } finally {
      await second.close();
    }
    assert.deepEqual(problems, [], 'no script errors');
  });
});
