// MCP servers as connections: a help desk over streamable HTTP (bearer token) and a calculator over stdio, both real
// servers built with the protocol's SDK. Their tools become agent tools (`mcp.<connection>.<tool>`) for tool nodes
// and for a model's tool calls, under the agent's approval policy, with the server's own names, schemas, results and
// errors; a call is made once however often its step is retried.
import assert from 'node:assert/strict';
import path from 'node:path';
import { checkedFetch } from '../support/openapi-check';
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
import { startHelpDesk, type HelpDesk } from '../fakes/mcp-servers';
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

describe('connections: MCP servers', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let fake: FakeAnthropic;
  let desk: HelpDesk;
  let key: string;
  let ws: string;

  before(async () => {
    [desk, fake] = await Promise.all([startHelpDesk(), startFakeAnthropic()]);
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-test', unavailableRetries: 0 },
        http: { allowHosts: ['127.0.0.1'] }, // the help desk listens on this machine
        mcp: { stdioCommands: ['node'] },
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
    await desk?.close();
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
  const connectDesk = (name: string, token = desk.token, url = desk.url) =>
    call('POST', '/connections', {
      name,
      kind: 'mcp',
      config: { transport: 'http', url },
      credentials: { headers: { Authorization: `Bearer ${token}` } },
    });
  async function waitForApproval(runId: string): Promise<Json> {
    for (let i = 0; i < 600; i++) {
      const list = await call('GET', `/approvals?run_id=${runId}&status=pending`);
      if (list.body.data.length > 0) return list.body.data[0];
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no approval came for run ${runId}`);
  }
  async function run(spec: Json, input: unknown[]) {
    const agent = await createLiveAgent(h, ws, spec);
    return startTestRun(h, ws, agent.id, JSON.stringify(input));
  }
  const ticketAgent = (policy: Json = {}) => ({
    name: 'open tickets',
    connections: ['helpdesk'],
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'ticket' },
      {
        kind: 'tool',
        id: 'ticket',
        tool: 'mcp.helpdesk.create_ticket',
        arguments: { customer: '{{customer}}', subject: '{{subject}}' },
        save_as: 'ticket',
      },
    ],
    policy,
  });

  it('connects over HTTP with its token, lists what the server offers, and never answers or stores the token', async () => {
    const refused = await connectDesk('helpdesk', 'wrong-token');
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'connection_failed');

    const made = await connectDesk('helpdesk');
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual(made.body.config, { transport: 'http', url: desk.url });
    const tested = await call('POST', `/connections/${made.body.id}/test`);
    assert.equal(tested.body.ok, true);
    assert.equal(tested.body.server_version, 'help-desk 2.1.0');
    assert.deepEqual(tested.body.tools, ['lookup_customer', 'create_ticket']);
    const row = await h.stack.knex('connections').where({ id: made.body.id }).first();
    const seen = JSON.stringify([made.body, tested.body, (await call('GET', '/connections')).body, row]);
    assert.ok(!seen.includes(desk.token), 'the token is sealed in the row and in no answer');
  });

  it('refuses a server on an internal address the operator has not allowed, and commands the operator has not allowed', async () => {
    const internal = await connectDesk('internal', desk.token, desk.url.replace('127.0.0.1', '127.0.0.2'));
    assert.equal(internal.status, 422);
    assert.match(internal.body.detail, /private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/);
    const shell = await call('POST', '/connections', {
      name: 'shell',
      kind: 'mcp',
      config: { transport: 'stdio', command: 'bash', args: ['-c', 'id'] },
    });
    assert.equal(shell.status, 422);
    assert.match(shell.body.detail, /"bash" may not be started on this deployment: .*CADRE_MCP_STDIO_COMMANDS/);
    assert.equal((await call('GET', '/connections')).body.data.length, 1, 'neither was saved');
  });

  it("a tool node's call asks for approval by default, then runs once with the run's idempotency key", async () => {
    desk.tickets.length = 0;
    const started = await run(ticketAgent(), [{ customer: 'acme', subject: 'Invoice is wrong' }]);
    const approval = await waitForApproval(started.id);
    assert.equal(approval.tool, 'mcp.helpdesk.create_ticket');
    assert.deepEqual(approval.arguments, { customer: 'acme', subject: 'Invoice is wrong' });
    assert.equal(desk.tickets.length, 0, 'nothing happens before a person approves');
    const decided = await call('POST', `/approvals/${approval.id}/decision`, { decision: 'approve' });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed');
    const [row] = await items(h, started.id);
    assert.deepEqual(row.data.ticket, { text: 'opened ticket #1001' });
    assert.equal(desk.tickets.length, 1);
    assert.equal(desk.tickets[0].idempotencyKey, `${started.id}:0:ticket`);
  });

  it('the policy can let a whole server through (mcp.<connection>.*); its errors fail the item with its message', async () => {
    const started = await run(
      {
        name: 'look up',
        connections: ['helpdesk'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'look' },
          {
            kind: 'tool',
            id: 'look',
            tool: 'mcp.helpdesk.lookup_customer',
            arguments: { customer: '{{customer}}' },
            save_as: 'account',
          },
        ],
        policy: { approvals: { 'mcp.helpdesk.*': { mode: 'never' } } },
      },
      [{ customer: 'acme' }, { customer: 'nobody' }],
    );
    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed');
    const [acme, nobody] = await items(h, started.id);
    assert.deepEqual(acme.data.account, { plan: 'enterprise', open_tickets: 2 }, 'structured content as the result');
    assert.equal(nobody.status, 'failed');
    assert.match(nobody.error, /mcp\.helpdesk\.lookup_customer failed: .*no customer \\"nobody\\"/);
  });

  it("a model step offered a whole server sees the server's tools and schemas, and its gated call waits for a person", async () => {
    desk.tickets.length = 0;
    fake.setHandler((body) => {
      const turn = turnOf(body);
      if (turn === 0) return reply([toolUse('mcp_helpdesk_lookup_customer', { customer: 'acme' })]);
      if (turn === 1) {
        const account = JSON.parse(String(toolResultsOf(body)[0].content));
        return reply([
          toolUse('mcp_helpdesk_create_ticket', { customer: 'acme', subject: `Plan ${account.plan}: renewal` }),
        ]);
      }
      return reply([toolUse('submit_output', { ticket: String(toolResultsOf(body)[0].content) })]);
    });
    const started = await run(
      {
        name: 'triage',
        connections: ['helpdesk'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'triage' },
          {
            kind: 'llm',
            id: 'triage',
            instructions: 'Open a ticket about the renewal, naming the plan.',
            tools: ['mcp.helpdesk'],
            output_schema: { type: 'object', properties: { ticket: { type: 'string' } }, required: ['ticket'] },
          },
        ],
        policy: { approvals: { 'mcp.helpdesk.lookup_customer': { mode: 'never' } } },
      },
      [{ customer: 'acme' }],
    );
    const approval = await waitForApproval(started.id);
    assert.equal(approval.tool, 'mcp.helpdesk.create_ticket');
    assert.deepEqual(approval.arguments, { customer: 'acme', subject: 'Plan enterprise: renewal' });
    const offered = fake.requests[0].body.tools!;
    assert.deepEqual(
      offered.map((t) => t.name),
      ['mcp_helpdesk_lookup_customer', 'mcp_helpdesk_create_ticket', 'submit_output'],
    );
    assert.deepEqual((offered[1].input_schema as Json).required, ['customer', 'subject']);
    assert.equal(offered[1].description, 'Open a support ticket for a customer.');

    await call('POST', `/approvals/${approval.id}/decision`, { decision: 'approve' });
    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed');
    const [row] = await items(h, started.id);
    assert.equal(row.data.ticket, JSON.stringify({ text: 'opened ticket #1001' }));
    assert.equal(desk.tickets.length, 1);
  });

  it('a server the worker starts over stdio (an allowed command) serves a model step', async () => {
    const made = await call('POST', '/connections', {
      name: 'calc',
      kind: 'mcp',
      config: {
        transport: 'stdio',
        command: 'node',
        args: ['--import', 'tsx', path.join(__dirname, '../fakes/mcp-stdio-server.ts')],
      },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    fake.setHandler((body) =>
      turnOf(body) === 0
        ? reply([toolUse('mcp_calc_add', { a: 2.5, b: 4 })])
        : reply([toolUse('submit_output', { sum: Number(JSON.parse(String(toolResultsOf(body)[0].content)).text) })]),
    );
    const started = await run(
      {
        name: 'sum',
        connections: ['calc'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'sum' },
          {
            kind: 'llm',
            id: 'sum',
            instructions: 'Add the numbers.',
            tools: ['mcp.calc.add'],
            output_schema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
          },
        ],
        policy: { approvals: { 'mcp.calc.*': { mode: 'never' } } },
      },
      [{ a: 2.5, b: 4 }],
    );
    const done = await waitForRun(h, started.id);
    assert.equal(done.status, 'completed', JSON.stringify(await items(h, started.id)));
    assert.equal((await items(h, started.id))[0].data.sum, 6.5);
  });

  it('refuses agents whose tool nodes name a whole server, or servers the agent does not list', async () => {
    const whole = ticketAgent();
    (whole.nodes[1] as Json).tool = 'mcp.helpdesk';
    const refused = await call('POST', '/agents', whole);
    assert.equal(refused.status, 422);
    assert.match(refused.body.detail, /must name one tool of the connection: "mcp\.helpdesk\.<tool>"/);
    const unlisted = await call('POST', '/agents', { ...ticketAgent(), connections: [] });
    assert.equal(unlisted.status, 422);
    assert.match(unlisted.body.detail, /of the connection "helpdesk", which the agent's "connections" do not list/);
  });
});
