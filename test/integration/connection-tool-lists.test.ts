// An MCP connection's tools are read from the list its server gave when someone who may manage connections last asked:
// a read-only API key never makes Cadre call the server with the connection's stored headers.
import assert from 'node:assert/strict';
import { createApiKey } from '../../db/api-keys';
import { startHelpDesk, type HelpDesk } from '../fakes/mcp-servers';
import { connectorApi, type ConnectorApi, type Json } from '../support/connections';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';

describe('connections: an MCP server is asked for its tools only by those who may manage connections', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let desk: HelpDesk;
  let admin: ConnectorApi;
  let reader: ConnectorApi;

  before(async () => {
    desk = await startHelpDesk({ sessions: true }); // counts the sessions Cadre opens
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never, worker: false });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    const { key } = await createApiKey(h.stack.knex, t.workspace.id, 'reader', ['read']);
    admin = connectorApi(h, api.url, t.key, t.workspace.id);
    reader = connectorApi(h, api.url, key, t.workspace.id);
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await desk?.close();
  });

  it('lists for a manager and keeps the list; a read-only key reads the list, and never starts a call', async () => {
    const made = await admin.connect(
      'helpdesk',
      'mcp',
      { transport: 'http', url: desk.url },
      { headers: { Authorization: `Bearer ${desk.token}` } },
    );
    const tools = ['create_ticket', 'lookup_customer'];
    let sessions = desk.sessionsOpened;

    // Listed as the admin made it: a read-only key reads that list.
    const read = await reader.call('GET', `/connections/${made.id}/tools`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.deepEqual(read.body.data.map((t: Json) => t.tool).sort(), tools);
    assert.ok(read.body.listed_at);
    assert.equal(desk.sessionsOpened, sessions, 'reading the kept list called the server');

    assert.equal((await reader.call('POST', `/connections/${made.id}/tools/refresh`)).status, 403);
    const refreshed = await admin.call('POST', `/connections/${made.id}/tools/refresh`);
    assert.equal(refreshed.status, 200);
    assert.ok(desk.sessionsOpened > sessions, 'a refresh asks the server');
    sessions = desk.sessionsOpened;

    // New settings may reach another server: the kept list goes with the old ones, and only a manager lists again.
    const changed = await admin.call('PATCH', `/connections/${made.id}`, {
      config: { transport: 'http', url: `${desk.url}?v=2` },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    sessions = desk.sessionsOpened;
    const refused = await reader.call('GET', `/connections/${made.id}/tools`);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'tools_not_listed');
    assert.equal(desk.sessionsOpened, sessions, 'a read-only key made Cadre call the server');

    const listed = await admin.call('GET', `/connections/${made.id}/tools`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(listed.body.data.map((t: Json) => t.tool).sort(), tools);
    assert.ok(desk.sessionsOpened > sessions);
    assert.equal((await reader.call('GET', `/connections/${made.id}/tools`)).status, 200);
  });
});
