// REST APIs as connections, imported from their OpenAPI document: an inventory API served locally from its own
// document. Each chosen operation becomes a typed tool (`api.<connection>.<operationId>`: arguments from its
// parameters and JSON body, the answer checked against the document), with the connection's auth, under the agent's
// approval policy, for tool nodes and for a model's tool calls. Values given as text (a CSV column) fit the typed
// arguments; a pasted document with a relative server takes it on the connection's base_url.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import { createConnection } from '../../db/connections';
import { sqlConfigSchema } from '../../model/connection';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startApi,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { inventoryDocument, startInventoryApi, type InventoryApi } from '../fakes/inventory-api';
import {
  apiErrors,
  reply,
  startFakeAnthropic,
  toolResultsOf,
  toolUse,
  turnOf,
  type FakeAnthropic,
} from '../fakes/anthropic';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('connections: REST APIs from their OpenAPI document', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let fake: FakeAnthropic;
  let inventory: InventoryApi;
  let key: string;
  let ws: string;

  before(async () => {
    [inventory, fake] = await Promise.all([startInventoryApi(), startFakeAnthropic()]);
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-test', unavailableRetries: 0 },
        http: { allowHosts: ['127.0.0.1'] }, // the inventory API listens on this machine
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await fake?.close();
    await inventory?.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.setHandler(() => apiErrors.internal('no handler set for this test'));
  });

  const call = async (method: string, url: string, json?: unknown) => {
    const res = await checkedFetch(`${api.url}/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (res.status === 204 ? {} : await res.json()) as Json };
  };
  const waitForApproval = async (runId: string): Promise<Json> => {
    for (let i = 0; i < 600; i++) {
      const list = await call('GET', `/approvals?run_id=${runId}&status=pending`);
      if (list.body.data.length > 0) return list.body.data[0];
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no approval came for run ${runId}`);
  };
  const run = async (spec: Json, input: unknown[]) => {
    const agent = await createLiveAgent(h, ws, spec);
    return startTestRun(h, ws, agent.id, JSON.stringify(input));
  };
  const toolAgent = (tool: string, args: Json, policy: Json = {}) => ({
    name: `calls ${tool}`,
    connections: ['inventory'],
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'call' },
      { kind: 'tool', id: 'call', tool, arguments: args, save_as: 'answer' },
    ],
    policy: { approvals: { 'api.inventory.*': { mode: 'never' } }, ...policy },
  });

  it('imports the document from its URL, keeps it, and names its operations; a broken document is refused', async () => {
    const notOpenApi = await call('POST', '/connections', {
      name: 'inventory',
      kind: 'openapi',
      config: { document: { swagger: '2.0', paths: {} } },
    });
    assert.equal(notOpenApi.status, 422);
    assert.match(notOpenApi.body.detail, /not an OpenAPI 3\.x document/);
    const unknownOp = await call('POST', '/connections', {
      name: 'inventory',
      kind: 'openapi',
      config: { document: inventoryDocument(inventory.url), operations: ['getItem', 'deleteEverything'] },
    });
    assert.equal(unknownOp.status, 422);
    assert.match(unknownOp.body.detail, /the document has no operation "deleteEverything"/);

    const made = await call('POST', '/connections', {
      name: 'inventory',
      kind: 'openapi',
      config: { document_url: `${inventory.url}/openapi.json`, auth: { type: 'bearer' } },
      credentials: { secret: inventory.token },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    // The document is kept with the connection, and answered on its own route: connections sum it up.
    const summary = { title: 'Inventory', version: '1.4.0', operation_count: 3, server_url: `${inventory.url}/v1` };
    assert.deepEqual(made.body.document, summary);
    assert.equal(made.body.config.document, undefined);
    assert.deepEqual(made.body.config.operations, ['getItem', 'createOrder', 'getBroken']);
    assert.deepEqual(made.body.can, [
      'GET /items/{sku} (getItem)',
      'POST /orders (createOrder)',
      'GET /broken (getBroken)',
    ]);
    const tested = await call('POST', `/connections/${made.body.id}/test`);
    assert.deepEqual(tested.body, {
      ok: true,
      server_version: 'Inventory 1.4.0',
      tools: ['getItem', 'createOrder', 'getBroken'],
    });
    const row = await h.stack.knex('connections').where({ id: made.body.id }).first();
    assert.ok(!JSON.stringify([made.body, tested.body, row]).includes(inventory.token), 'the token is sealed');
  });

  it('lists connections with a summary of their document, which is answered whole on its own route', async () => {
    const listed = await call('GET', '/connections');
    assert.equal(listed.status, 200);
    const inventoryConnection = listed.body.data.find((c: Json) => c.name === 'inventory');
    const summary = { title: 'Inventory', version: '1.4.0', operation_count: 3, server_url: `${inventory.url}/v1` };
    assert.deepEqual(inventoryConnection.document, summary);
    assert.equal(inventoryConnection.config.document, undefined, 'the list does not carry the document');
    assert.ok(
      !JSON.stringify(listed.body).includes('"paths"'),
      'no part of the document is in the list, whatever its size',
    );
    const one = await call('GET', `/connections/${inventoryConnection.id}`);
    assert.deepEqual(one.body.document, summary);
    assert.equal(one.body.config.document, undefined);

    const document = await call('GET', `/connections/${inventoryConnection.id}/document`);
    assert.equal(document.status, 200);
    assert.deepEqual(document.body.info, { title: 'Inventory', version: '1.4.0' });
    assert.deepEqual(
      Object.keys(document.body.paths).sort(),
      Object.keys(inventoryDocument(inventory.url).paths).sort(),
    );

    // Reading it takes what reading the connection takes: a key of another workspace finds neither.
    const other = await createTestWorkspace(h);
    const elsewhere = await checkedFetch(`${api.url}/v1/connections/${inventoryConnection.id}/document`, {
      headers: { authorization: `Bearer ${other.key}` },
    });
    assert.equal(elsewhere.status, 404);
    assert.equal(((await elsewhere.json()) as Json).code, 'connection_not_found');
    const anonymous = await checkedFetch(`${api.url}/v1/connections/${inventoryConnection.id}/document`);
    assert.equal(anonymous.status, 401);

    // Only a REST API has a document.
    const database = await createConnection(h.stack.knex, {
      workspace_id: ws,
      name: 'shop',
      kind: 'postgres',
      config: sqlConfigSchema.parse({ host: 'db.example.com', database: 'shop', user: 'reader' }),
      credentials_sealed: 'not opened',
      created_by: 'test',
    });
    try {
      const none = await call('GET', `/connections/${database.id}/document`);
      assert.equal(none.status, 409);
      assert.equal(none.body.code, 'not_openapi');
      assert.equal((await call('GET', `/connections/${database.id}`)).body.document, undefined);
    } finally {
      await h.stack.knex('connections').where({ id: database.id }).delete();
    }
  });

  it('a tool node calls an operation with its parameters, and the answer is the documented JSON', async () => {
    const started = await run(toolAgent('api.inventory.getItem', { sku: '{{sku}}' }), [
      { sku: 'SKU-1' },
      { sku: 'SKU-404' },
    ]);
    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed');
    const [found, missing] = await items(h, started.id);
    assert.deepEqual(found.data.answer, {
      status: 200,
      body: { sku: 'SKU-1', name: 'Blue paint, 5 l', in_stock: 12, price: 39.9 },
    });
    assert.equal(missing.status, 'failed');
    assert.match(missing.error, /api\.inventory\.getItem: the API answered 404: \{"error":"no item SKU-404"\}/);
    assert.ok(
      inventory.requests.some((r) => r.path === '/v1/items/SKU-1' && r.authorization === `Bearer ${inventory.token}`),
    );
  });

  it('an answer its own document does not describe fails the step, saying what does not match', async () => {
    const started = await run(toolAgent('api.inventory.getBroken', {}), [{}]);
    await waitForRun(h, started.id);
    const [row] = await items(h, started.id);
    assert.equal(row.status, 'failed');
    assert.match(row.error, /the API's answer does not match its document \(data\/count must be integer\)/);
  });

  it('a write asks for approval by default and is sent once, with the run as its Idempotency-Key', async () => {
    inventory.orders.length = 0;
    const started = await run(
      toolAgent('api.inventory.createOrder', { body: { sku: '{{sku}}', quantity: '{{quantity}}' } }, { approvals: {} }),
      [{ sku: 'SKU-2', quantity: 30 }],
    );
    const approval = await waitForApproval(started.id);
    assert.equal(approval.tool, 'api.inventory.createOrder');
    assert.equal(inventory.orders.length, 0);
    assert.equal((await call('POST', `/approvals/${approval.id}/decision`, { decision: 'approve' })).status, 200);
    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed');
    const [row] = await items(h, started.id);
    assert.deepEqual(row.data.answer, { status: 201, body: { order_id: 501 } });
    assert.deepEqual(inventory.orders, [{ sku: 'SKU-2', quantity: 30, idempotencyKey: `${started.id}:0:call` }]);
  });

  it('values from a CSV fit the typed arguments ("3" is an integer); a value that is none fails its item, naming it', async () => {
    inventory.orders.length = 0;
    const spec: Json = toolAgent('api.inventory.createOrder', { body: { sku: '{{sku}}', quantity: '{{quantity}}' } });
    spec.nodes[0].format = 'csv';
    const agent = await createLiveAgent(h, ws, spec);
    const started = await startTestRun(h, ws, agent.id, 'sku,quantity\nSKU-1,3\nSKU-2,many\n');
    await waitForRun(h, started.id);
    const [placed, many] = await items(h, started.id);
    assert.equal(placed.status, 'done', JSON.stringify(placed));
    assert.deepEqual(placed.data.answer, { status: 201, body: { order_id: 501 } });
    assert.deepEqual(
      inventory.orders.map(({ sku, quantity }) => ({ sku, quantity })),
      [{ sku: 'SKU-1', quantity: 3 }],
    );
    assert.equal(many.status, 'failed');
    assert.match(many.error, /api\.inventory\.createOrder: argument "body\.quantity": "many" is not an integer/);
  });

  it('a pasted document with a relative server asks for base_url, and takes the server path on a base_url that is a host', async () => {
    const document = { ...inventoryDocument(inventory.url), servers: [{ url: '/v1' }] };
    const missing = await call('POST', '/connections', {
      name: 'pasted',
      kind: 'openapi',
      config: { document, operations: ['getItem'] },
    });
    assert.equal(missing.status, 422);
    assert.match(missing.body.detail, /the document's server is relative \(\/v1\): set base_url/);
    // A host gets the server's path; a whole address is used as it is.
    for (const base_url of [inventory.url, `${inventory.url}/v1`]) {
      const made = await call('POST', '/connections', {
        name: 'pasted',
        kind: 'openapi',
        config: { document, base_url, operations: ['getItem'] },
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const started = await run(
        {
          ...toolAgent('api.pasted.getItem', { sku: '{{sku}}' }),
          connections: ['pasted'],
          policy: { approvals: { 'api.pasted.*': { mode: 'never' } } },
        },
        [{ sku: 'SKU-1' }],
      );
      await waitForRun(h, started.id);
      const [row] = await items(h, started.id);
      assert.equal(row.status, 'done', JSON.stringify(row));
      assert.equal(row.data.answer.body.sku, 'SKU-1');
      assert.equal((await call('DELETE', `/connections/${made.body.id}`)).status, 204);
    }
  });

  it('refused credentials fail the step and say where to fix them', async () => {
    const id = (await call('GET', '/connections')).body.data.find((c: Json) => c.name === 'inventory').id;
    const revoked = await call('PATCH', `/connections/${id}`, { credentials: { secret: 'an old token' } });
    assert.equal(revoked.status, 200);
    const started = await run(toolAgent('api.inventory.createOrder', { body: { sku: 'SKU-1', quantity: 1 } }), [{}]);
    await waitForRun(h, started.id);
    const [row] = await items(h, started.id);
    assert.equal(row.status, 'failed');
    assert.match(row.error, /refused the credentials of connection "inventory" \(401\).*update them in Integrations/);
    await call('PATCH', `/connections/${id}`, { credentials: { secret: inventory.token } });
  });

  it("a model step offered the whole API sees each operation's typed arguments and calls one", async () => {
    fake.setHandler((body) =>
      turnOf(body) === 0
        ? reply([toolUse('api_inventory_getItem', { sku: 'SKU-1' })])
        : reply([
            toolUse('submit_output', {
              in_stock: JSON.parse(String(toolResultsOf(body)[0].content)).body.in_stock,
            }),
          ]),
    );
    const started = await run(
      {
        name: 'stock',
        connections: ['inventory'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'ask' },
          {
            kind: 'llm',
            id: 'ask',
            instructions: 'How many are in stock?',
            tools: ['api.inventory'],
            output_schema: { type: 'object', properties: { in_stock: { type: 'integer' } }, required: ['in_stock'] },
          },
        ],
        policy: { approvals: { 'api.inventory.getItem': { mode: 'never' } } },
      },
      [{ sku: 'SKU-1' }],
    );
    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed');
    assert.equal((await items(h, started.id))[0].data.in_stock, 12);
    const offered = fake.requests[0].body.tools!;
    assert.deepEqual(
      offered.map((t) => t.name),
      ['api_inventory_getItem', 'api_inventory_createOrder', 'api_inventory_getBroken', 'submit_output'],
    );
    const order = offered[1].input_schema as Json;
    assert.deepEqual(order.required, ['body']);
    assert.deepEqual(order.properties.body.required, ['sku', 'quantity'], 'the $ref is inlined for the model');
  });
});
