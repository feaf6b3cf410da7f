// What the editor offers for a connection (GET /v1/connections/{id}/tools): a real MCP help desk over streamable
// HTTP is asked for its tools with the connection's sealed token, named as agents call them; a server that no longer
// answers is 422 connection_failed with its reason; a database offers the sql.* tools its settings allow.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { startPostgresServer, type DatabaseServer } from '../support/servers';
import { startHelpDesk, type HelpDesk } from '../fakes/mcp-servers';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('connections: the tools a connection offers', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let desk: HelpDesk;
  let db: DatabaseServer;
  let key: string;
  let readKey: string;

  before(async () => {
    [desk, db] = await Promise.all([startHelpDesk(), startPostgresServer()]);
    h = await createHarness({
      worker: false,
      config: { http: { allowHosts: ['127.0.0.1'] } } as never, // the help desk listens on this machine
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    const made = await call('POST', '/api-keys', { name: 'reader', scopes: ['read'] });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    readKey = made.body.key;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await desk?.close();
    await db?.stop();
  });

  async function call(method: string, url: string, json?: unknown, bearer = key) {
    const res = await checkedFetch(`${api.url}/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (res.status === 204 ? {} : await res.json()) as Json };
  }

  it("lists an MCP server's tools as agent tools, with their descriptions and input schemas", async () => {
    const made = await call('POST', '/connections', {
      name: 'helpdesk',
      kind: 'mcp',
      config: { transport: 'http', url: desk.url },
      credentials: { headers: { Authorization: `Bearer ${desk.token}` } },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));

    // Listed as an admin made it: a key that may only read reads that list.
    const listed = await call('GET', `/connections/${made.body.id}/tools`, undefined, readKey);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      listed.body.data.map((t: Json) => [t.name, t.tool, t.description]),
      [
        ['mcp.helpdesk.lookup_customer', 'lookup_customer', "A customer's plan and open tickets."],
        ['mcp.helpdesk.create_ticket', 'create_ticket', 'Open a support ticket for a customer.'],
      ],
    );
    const ticket = listed.body.data[1].input_schema;
    assert.equal(ticket.type, 'object');
    assert.deepEqual(Object.keys(ticket.properties).sort(), ['customer', 'subject']);
    assert.deepEqual([...ticket.required].sort(), ['customer', 'subject']);
    assert.equal(ticket.properties.subject.minLength, 3);
    assert.ok(!JSON.stringify(listed.body).includes(desk.token), 'the token is never answered');

    // The server stops answering: the kept list is still read; asking again says why it fails, and the connection is
    // not marked (only Test does that).
    await desk.close();
    assert.equal((await call('GET', `/connections/${made.body.id}/tools`, undefined, readKey)).status, 200);
    const gone = await call('POST', `/connections/${made.body.id}/tools/refresh`);
    assert.equal(gone.status, 422);
    assert.equal(gone.body.code, 'connection_failed');
    assert.match(gone.body.detail, new RegExp(`^could not connect to mcp at ${desk.url.replace(/[.]/g, '\\.')}: .+`));
    assert.equal((await call('GET', `/connections/${made.body.id}`)).body.status, 'connected');
    desk = await startHelpDesk();
  });

  it('refuses a connection of another workspace as not found', async () => {
    const other = await createTestWorkspace(h);
    const listed = await call('GET', '/connections', undefined, other.key);
    assert.deepEqual(listed.body.data, []);
    const [mine] = (await call('GET', '/connections')).body.data;
    const refused = await call('GET', `/connections/${mine.id}/tools`, undefined, other.key);
    assert.equal(refused.status, 404);
    assert.equal(refused.body.code, 'connection_not_found');
  });

  it("lists a database's sql.* tools, the writing ones only when it allows writes", async () => {
    const made = await call('POST', '/connections', {
      name: 'shop',
      kind: 'postgres',
      config: { host: db.host, port: db.port, database: db.database, user: db.user },
      credentials: { password: db.password },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const reading = await call('GET', `/connections/${made.body.id}/tools`);
    assert.equal(reading.status, 200);
    assert.deepEqual(
      reading.body.data.map((t: Json) => t.name),
      ['sql.list_tables', 'sql.query'],
    );
    const query = reading.body.data[1];
    assert.equal(query.tool, 'sql.query');
    assert.match(query.description, /read-only SQL statement/);
    assert.deepEqual(Object.keys(query.input_schema.properties).sort(), ['connection', 'params', 'sql']);

    await call('PATCH', `/connections/${made.body.id}`, { config: { allow_writes: true } });
    const writing = await call('GET', `/connections/${made.body.id}/tools`);
    assert.deepEqual(
      writing.body.data.map((t: Json) => t.name),
      ['sql.list_tables', 'sql.query', 'sql.insert', 'sql.update'],
    );
  });
});
