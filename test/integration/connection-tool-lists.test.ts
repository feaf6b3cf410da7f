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
    const sessions = desk.sessionsOpened;

    const before = await reader.call('GET', `/connections/${made.id}/tools`);
    assert.equal(before.status, 409, JSON.stringify(before.body));
    assert.equal(before.body.code, 'tools_not_listed');
    assert.equal(desk.sessionsOpened, sessions, 'a read-only key made Cadre call the server');

    const listed = await admin.call('GET', `/connections/${made.id}/tools`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(listed.body.data.map((t: Json) => t.tool).sort(), ['create_ticket', 'lookup_customer']);
    assert.ok(listed.body.listed_at);
    const afterListing = desk.sessionsOpened;
    assert.ok(afterListing > sessions);

    const read = await reader.call('GET', `/connections/${made.id}/tools`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.data, listed.body.data);
    assert.equal(desk.sessionsOpened, afterListing, 'reading the kept list called the server');

    assert.equal((await reader.call('POST', `/connections/${made.id}/tools/refresh`)).status, 403);
    const refreshed = await admin.call('POST', `/connections/${made.id}/tools/refresh`);
    assert.equal(refreshed.status, 200);
    assert.ok(desk.sessionsOpened > afterListing);

    // New settings may reach another server: the kept list goes with the old ones.
    const changed = await admin.call('PATCH', `/connections/${made.id}`, {
      config: { transport: 'http', url: `${desk.url}?v=2` },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal((await reader.call('GET', `/connections/${made.id}/tools`)).status, 409);
  });
});
