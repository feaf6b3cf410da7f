// The HubSpot connector against a local HubSpot CRM API (test/fakes/hubspot-api.ts) through @hubspot/api-client:
// connections with a private app token or an OAuth 2.0 account, creates held until a reviewer approves them and never
// made twice (a contact by its email, a deal by its step's key), paging through search results, updates and
// associations, rate limits waited out as Retry-After asks, a model's search, the contact.created and deal.updated
// pollers, and errors a person can act on.
import assert from 'node:assert/strict';
import { hubspotImplementation } from '../../../activities/connectors/hubspot';
import type { OpenedConnection } from '../../../activities/connectors/connector';
import { hubspotConfigSchema } from '../../../model/connectors/hubspot';
import { startFakeHubspot, type FakeHubspot } from '../../fakes/hubspot-api';
import {
  apiErrors,
  reply,
  startFakeAnthropic,
  toolResultsOf,
  toolUse,
  turnOf,
  type FakeAnthropic,
} from '../../fakes/anthropic';
import { startOidcProvider, type TestOidcProvider } from '../../support/oidc-provider';
import { connectOAuthAccount, connectionCallback, introspects } from '../../support/oauth-consent';
import { createHarness, createTestWorkspace, items, startApi, waitForRun, type Harness } from '../../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';

const privateAppToken = 'pat-na1-11111111-2222-3333-4444-555555555555';

describe('connectors: HubSpot', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let crm: FakeHubspot;
  let idp: TestOidcProvider;
  let model: FakeAnthropic;

  before(async () => {
    idp = await startOidcProvider('http://cadre.test/v1/auth/sso/callback', {
      connections: { redirectUri: connectionCallback },
    });
    crm = await startFakeHubspot({ authorize: (token) => introspects(idp, token) });
    crm.addToken(privateAppToken);
    crm.defineProperty('deals', 'cadre_step_key');
    crm.defineProperty('companies', 'cadre_step_key');
    model = await startFakeAnthropic();
    h = await createHarness({
      config: {
        http: { allowHosts: ['127.0.0.1'] }, // HubSpot and the provider are on this machine
        model: { apiKey: 'test-key', baseUrl: model.url, name: 'claude-test', unavailableRetries: 0 },
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    c = connectorApi(h, api.url, t.key, t.workspace.id);
    await c.connect('crm', 'hubspot', { base_url: crm.url }, { access_token: privateAppToken });
    await c.connect(
      'crm-keyed',
      'hubspot',
      { base_url: crm.url, step_key_property: 'cadre_step_key' },
      { access_token: privateAppToken },
    );
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await model?.close();
    await crm?.close();
    await idp?.close();
  });
  beforeEach(() => {
    model.reset();
    model.setHandler(() => apiErrors.internal('no handler set for this test'));
  });

  const writes = ['hubspot.create', 'hubspot.update', 'hubspot.associate'];
  const agentOf = (nodes: Json[], opts: { review?: boolean; retries?: number; connection?: string } = {}) => ({
    name: 'crm steps',
    connections: [opts.connection ?? 'crm'],
    nodes: [{ kind: 'input', id: 'in', format: 'json', next: nodes[0].id }, ...nodes],
    policy: {
      approvals: opts.review ? {} : Object.fromEntries(writes.map((t) => [t, { mode: 'never' }])),
      error_policy: { retries: opts.retries ?? 0, on_item_failure: 'continue' },
    },
  });
  const step = (id: string, tool: string, args: Json, next?: string) => ({
    kind: 'tool',
    id,
    tool,
    arguments: { connection: 'crm', ...args },
    save_as: id,
    ...(next ? { next } : {}),
  });
  async function run(spec: Json, input: unknown[]) {
    const { started } = await c.runOf(spec, input);
    await waitForRun(h, started.id);
    return items(h, started.id);
  }
  const creates = (type: string) =>
    crm.calls.filter((x) => x.method === 'POST' && x.path === `/crm/v3/objects/${type}`);

  it('connects with a private app token, refuses a wrong one with what to do, and keeps it secret', async () => {
    const made = (await c.call('GET', '/connections')).body.data.find((x: Json) => x.name === 'crm');
    const tested = await c.call('POST', `/connections/${made.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.match(tested.body.server_version, /^HubSpot CRM at 127\.0\.0\.1:\d+$/);
    assert.deepEqual(tested.body.found, ['contacts (none yet)', 'companies (none yet)', 'deals (none yet)']);

    const attempts: [Json, Json | undefined, RegExp][] = [
      [{ base_url: crm.url }, undefined, /neither an access token nor an account/],
      [
        { base_url: crm.url },
        { access_token: 'pat-na1-not-a-token-hubspot-knows' },
        /refused by HubSpot \(401 INVALID_AUTHENTICATION: The access token used to make this call is not valid\.\): give it a valid private app token in Integrations/,
      ],
      [
        { base_url: crm.url, step_key_property: 'no_such_property' },
        { access_token: privateAppToken },
        /companies have no property "no_such_property" \(step_key_property\): make it in HubSpot as single-line text/,
      ],
    ];
    for (const [config, credentials, error] of attempts) {
      const res = await c.call('POST', '/connections', { name: 'wrong', kind: 'hubspot', config, credentials });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.match(res.body.detail, error);
      assert.ok(!JSON.stringify(res.body).includes('pat-na1-'), 'no token in the answer');
    }

    const answers = JSON.stringify([made, (await c.call('GET', `/connections/${made.id}`)).body, tested.body]);
    assert.ok(!answers.includes(privateAppToken));
    const row = await h.stack.knex('connections').where({ id: made.id }).first();
    assert.ok(!JSON.stringify(row).includes(privateAppToken), 'the row holds the token sealed');

    const hubspot = (await c.call('GET', '/connectors')).body.data.find((k: Json) => k.kind === 'hubspot');
    assert.equal(hubspot.category, 'crm');
    assert.deepEqual(
      hubspot.tools.map((t: Json) => [t.name, t.approval_default]),
      [
        ['hubspot.find', 'never'],
        ['hubspot.get', 'never'],
        ['hubspot.create', 'always'],
        ['hubspot.update', 'always'],
        ['hubspot.associate', 'always'],
      ],
    );
    assert.deepEqual(
      hubspot.events.map((e: Json) => e.name),
      ['contact.created', 'deal.updated'],
    );
  });

  it('holds a create until a reviewer approves it; a contact whose email HubSpot has is not made again', async () => {
    const { started } = await c.runOf(
      agentOf(
        [
          step('contact', 'hubspot.create', {
            type: 'contacts',
            properties: { email: '{{email}}', firstname: '{{name}}' },
          }),
        ],
        {
          review: true,
        },
      ),
      [{ email: 'ana@acme.test', name: 'Ana' }],
    );
    const approval = await c.waitForApproval(started.id);
    assert.equal(approval.tool, 'hubspot.create');
    assert.equal(crm.records('contacts').length, 0, 'nothing is made while the approval waits');
    await c.decide(approval.id, 'approve');
    await waitForRun(h, started.id);
    const [made] = await items(h, started.id);
    assert.equal(made.status, 'done', made.error);
    assert.equal(made.data.contact.existing, false);
    assert.deepEqual(
      crm.records('contacts').map((r) => [r.id, r.properties.email, r.properties.firstname]),
      [[made.data.contact.id, 'ana@acme.test', 'Ana']],
    );

    // The same email again (found by search), and one HubSpot's search has not indexed yet (its 409 names it).
    const lagging = crm.seed('contacts', { email: 'bo@globex.test', firstname: 'Bo' }, { searchable: false });
    const before = creates('contacts').length;
    const rows = await run(
      agentOf([step('contact', 'hubspot.create', { type: 'contacts', properties: { email: '{{email}}' } })]),
      [{ email: 'ANA@acme.test' }, { email: 'bo@globex.test' }],
    );
    assert.deepEqual(
      rows.map((r) => [r.status, r.data.contact?.id, r.data.contact?.existing]),
      [
        ['done', made.data.contact.id, true],
        ['done', lagging.id, true],
      ],
    );
    assert.equal(crm.records('contacts').length, 2);
    assert.equal(creates('contacts').length, before + 1, 'only the unindexed one was attempted, and refused');
  });

  it('finds records a page at a time, reads, updates and associates them', async () => {
    for (const name of ['Acme Rockets', 'Acme Anvils', 'Acme Traps', 'Globex'])
      crm.seed('companies', { name, city: 'Springfield' });
    const find = (after?: string) =>
      run(
        agentOf([
          step('found', 'hubspot.find', {
            type: 'companies',
            filters: [{ property: 'name', operator: 'CONTAINS_TOKEN', value: 'acme' }],
            properties: ['name', 'city'],
            sort: { property: 'name' },
            limit: 2,
            ...(after ? { after } : {}),
          }),
        ]),
        [{}],
      );
    const [first] = await find();
    assert.equal(first.status, 'done', first.error);
    assert.deepEqual(
      first.data.found.results.map((r: Json) => r.properties.name),
      ['Acme Anvils', 'Acme Rockets'],
    );
    assert.equal(first.data.found.total, 3);
    assert.ok(first.data.found.next_after);
    const [second] = await find(first.data.found.next_after);
    assert.deepEqual(
      second.data.found.results.map((r: Json) => r.properties.name),
      ['Acme Traps'],
    );
    assert.equal(second.data.found.next_after, null);

    const company = crm.records('companies').find((r) => r.properties.name === 'Acme Rockets')!;
    const deal = crm.seed('deals', { dealname: 'Rockets renewal', amount: '1000', dealstage: 'appointmentscheduled' });
    const [row] = await run(
      agentOf([
        step(
          'moved',
          'hubspot.update',
          { type: 'deals', id: '{{deal}}', properties: { dealstage: 'closedwon', amount: 1500 } },
          'linked',
        ),
        step(
          'linked',
          'hubspot.associate',
          { from_type: 'deals', from_id: '{{deal}}', to_type: 'companies', to_id: '{{company}}' },
          'read',
        ),
        step('read', 'hubspot.get', { type: 'deals', id: '{{deal}}', properties: ['dealstage', 'amount'] }),
      ]),
      [{ deal: deal.id, company: company.id }],
    );
    assert.equal(row.status, 'done', row.error);
    assert.equal(crm.records('deals').find((r) => r.id === deal.id)!.properties.dealstage, 'closedwon');
    assert.deepEqual(row.data.read.properties.amount, '1500');
    assert.deepEqual(crm.associations('deals', deal.id), [`companies:${company.id}`]);

    const [missing] = await run(agentOf([step('read', 'hubspot.get', { type: 'deals', id: '999999' })]), [{}]);
    assert.equal(missing.status, 'failed');
    assert.match(
      missing.error,
      /reading deal 999999: HubSpot has no such record \(404 OBJECT_NOT_FOUND: resource not found\)/,
    );
    const [unknown] = await run(
      agentOf([step('made', 'hubspot.create', { type: 'deals', properties: { dealname: 'x', colour: 'red' } })]),
      [{}],
    );
    assert.match(
      unknown.error,
      /creating a deal: HubSpot refused it \(400 VALIDATION_ERROR: .*Property \\?"colour\\?" does not exist/,
    );
  });

  it('waits out a 429 as Retry-After asks and creates once; a lost answer is found by the step key, or stops the step', async () => {
    const deals = () => crm.records('deals').length;
    const before = deals();
    crm.rateLimit(/^POST \/crm\/v3\/objects\/deals$/, 1);
    const [limited] = await run(
      agentOf([step('deal', 'hubspot.create', { type: 'deals', properties: { dealname: 'Limited' } })]),
      [{}],
    );
    assert.equal(limited.status, 'done', limited.error);
    assert.deepEqual(crm.rateLimited, ['POST /crm/v3/objects/deals']);
    assert.equal(deals(), before + 1);

    // HubSpot makes the deal but its answer is lost: with a step key property, the retry finds it.
    crm.loseAnswer(/^POST \/crm\/v3\/objects\/deals$/);
    const keyed = { ...step('deal', 'hubspot.create', { type: 'deals', properties: { dealname: 'Keyed' } }) };
    keyed.arguments.connection = 'crm-keyed';
    const [found] = await run(agentOf([keyed], { retries: 2, connection: 'crm-keyed' }), [{}]);
    assert.equal(found.status, 'done', found.error);
    assert.equal(found.data.deal.existing, true);
    const made = crm.records('deals').filter((r) => r.properties.dealname === 'Keyed');
    assert.equal(made.length, 1);
    assert.equal(found.data.deal.id, made[0].id);
    assert.ok(made[0].properties.cadre_step_key, 'the deal carries its step key');

    // Without one the step cannot tell, so it stops instead of making a second deal.
    crm.loseAnswer(/^POST \/crm\/v3\/objects\/deals$/);
    const [stopped] = await run(
      agentOf([step('deal', 'hubspot.create', { type: 'deals', properties: { dealname: 'Unkeyed' } })], { retries: 2 }),
      [{}],
    );
    assert.equal(stopped.status, 'failed');
    assert.match(
      stopped.error,
      /answer was lost .*the step stops rather than risk a second one: check HubSpot, and name a step_key_property on connection "crm"/,
    );
    assert.equal(crm.records('deals').filter((r) => r.properties.dealname === 'Unkeyed').length, 1);

    // A limit longer than a step waits fails it as retryable, saying when.
    crm.rateLimit(/^POST \/crm\/v3\/objects\/contacts\/search$/, 90, 1);
    const [waiting] = await run(agentOf([step('found', 'hubspot.find', { type: 'contacts' })]), [{}]);
    assert.equal(waiting.status, 'failed');
    assert.match(
      waiting.error,
      /HubSpot is still rate limiting the calls after 0 wait\(s\); the step is retried in 90 s/,
    );
  });

  it('a model finds a contact through the tool it is offered', async () => {
    crm.seed('contacts', { email: 'cy@initech.test', firstname: 'Cy', jobtitle: 'CTO' });
    model.setHandler((body) =>
      turnOf(body) === 0
        ? reply([
            toolUse('hubspot_find', {
              connection: 'crm',
              type: 'contacts',
              filters: [{ property: 'email', operator: 'EQ', value: 'cy@initech.test' }],
              properties: ['jobtitle'],
            }),
          ])
        : reply([
            toolUse('submit_output', {
              title: JSON.parse(String(toolResultsOf(body)[0].content)).results[0].properties.jobtitle,
            }),
          ]),
    );
    const [row] = await run(
      {
        name: 'who is it',
        connections: ['crm'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'ask' },
          {
            kind: 'llm',
            id: 'ask',
            instructions: "What is this contact's job title?",
            tools: ['hubspot.find'],
            output_schema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
          },
        ],
      },
      [{ email: 'cy@initech.test' }],
    );
    assert.equal(row.status, 'done', row.error);
    assert.equal(row.data.title, 'CTO');
    const offered = model.requests[0].body.tools!.find((t) => t.name === 'hubspot_find')!;
    assert.deepEqual((offered.input_schema as Json).properties.connection.enum, ['crm']);
  });

  it('acts through an OAuth 2.0 account with the access token the provider issued', async () => {
    await connectOAuthAccount(c, api.url, idp, 'hubspot-account');
    await c.connect('crm-oauth', 'hubspot', { base_url: crm.url, account: 'hubspot-account' });
    const spec = agentOf(
      [
        step('company', 'hubspot.create', {
          connection: 'crm-oauth',
          type: 'companies',
          properties: { name: 'Umbrella' },
        }),
      ],
      { connection: 'crm-oauth' },
    );
    const [row] = await run(spec, [{}]);
    assert.equal(row.status, 'done', row.error);
    assert.ok(crm.records('companies').some((r) => r.id === row.data.company.id && r.properties.name === 'Umbrella'));

    // An admin who points a connection elsewhere gets no token of the account to send there.
    const elsewhere = await c.call('POST', '/connections', {
      name: 'crm-elsewhere',
      kind: 'hubspot',
      config: { base_url: crm.url.replace('127.0.0.1', 'localhost'), account: 'hubspot-account' },
      credentials: {},
    });
    assert.equal(elsewhere.status, 422, JSON.stringify(elsewhere.body));
    assert.match(
      elsewhere.body.detail,
      /the access token of account "hubspot-account" goes only to its provider's hosts \(127\.0\.0\.1\), not to localhost/,
    );
  });

  it('reports created contacts and changed deals from a cursor, each change once', async () => {
    const connection: OpenedConnection = {
      name: 'crm',
      kind: 'hubspot',
      config: hubspotConfigSchema.parse({ base_url: crm.url }),
      credentials: { access_token: privateAppToken },
      version: 'poller-test',
      limits: { allowHosts: ['127.0.0.1'] },
    };
    const created = hubspotImplementation.pollers!['contact.created'];
    const updated = hubspotImplementation.pollers!['deal.updated'];
    const [contacts0, deals0] = [
      await created(connection as never, undefined),
      await updated(connection as never, undefined),
    ];
    assert.deepEqual([contacts0.events, deals0.events], [[], []], 'a new trigger starts from now');

    const dee = crm.seed('contacts', { email: 'dee@hooli.test' });
    const eve = crm.seed('contacts', { email: 'eve@hooli.test' });
    const contacts1 = await created(connection as never, contacts0.cursor);
    assert.deepEqual(
      contacts1.events.map((e) => e.id),
      [dee.id, eve.id],
    );
    assert.equal((contacts1.events[0].data as Json).properties.email, 'dee@hooli.test');
    // The cursor's own millisecond is read again, and triggers drop what they have seen: nothing is lost.
    const again = await created(connection as never, contacts1.cursor);
    assert.deepEqual(
      again.events.map((e) => e.id),
      [eve.id],
    );

    const deal = crm.seed('deals', { dealname: 'Hooli expansion' });
    crm.touch('deals', deal.id, { dealstage: 'closedwon' });
    const deals1 = await updated(connection as never, deals0.cursor);
    const changes = deals1.events.filter((e) => e.id.startsWith(`${deal.id}:`));
    assert.equal(changes.length, 1, 'made and changed since the last poll: its latest state');
    crm.touch('deals', deal.id, { amount: '5000' });
    const deals2 = await updated(connection as never, deals1.cursor);
    const latest = deals2.events.filter((e) => e.id.startsWith(`${deal.id}:`));
    assert.equal(latest.length, 1);
    assert.notEqual(latest[0].id, changes[0].id, 'each change is its own event');
  });
});
