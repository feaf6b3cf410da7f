// MCP servers as connections: a help desk over streamable HTTP (bearer token) and a calculator over stdio, both real
// servers built with the protocol's SDK. Their tools become agent tools (`mcp.<connection>.<tool>`) for tool nodes
// and for a model's tool calls, under the agent's approval policy, with the server's own names, schemas, results and
// errors; a call is made once however often its step is retried. Stdio servers are the operator's
// (CADRE_MCP_STDIO_SERVERS): a connection picks one by name, never a command; the server gets only its declared
// environment, runs unprivileged in a directory of its own, and a start-up failure shows its stderr. A server that
// restarts (an HTTP server forgetting its sessions, a stdio server that exits) costs no run: the session is opened
// again, and the run's log says so. Values given as text (a CSV column) fit the tools' typed arguments.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createConnection } from '../../db/connections';
import { loadSecretBox } from '../../db/secret-box';
import { connectMcp } from '../../activities/connectors/mcp/client';
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

const fakeServer = path.join(__dirname, '../fakes/mcp-stdio-server.ts');
/** `node --import tsx` by path: a server's working directory is its own, where no node_modules resolve `tsx`. */
const nodeWithTsx = (...args: string[]) => ({
  command: process.execPath,
  args: ['--import', pathToFileURL(require.resolve('tsx')).href, fakeServer, ...args],
});
const isRoot = process.getuid?.() === 0;
/** Written by the command a tenant once could run; never created now. */
const marker = path.join(os.tmpdir(), `cadre-mcp-ran-${process.pid}`);

describe('connections: MCP servers', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let fake: FakeAnthropic;
  let desk: HelpDesk;
  /** A help desk that keeps sessions, as the SDK's stateful example does, and restarts. */
  let sessionDesk: HelpDesk;
  let key: string;
  let ws: string;
  // Where the stdio servers get their directories: one every user may pass through (the stack's data directory
  // lets only its owner in, and a server running as nobody reaches its HOME by this path).
  const stdioDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-mcp-servers-'));
  fs.chmodSync(stdioDir, 0o711);
  const mcp = {
    stdioServers: {
      calc: { ...nodeWithTsx(), env: { GREETING: 'hello from the operator' }, description: 'Adds numbers' },
      broken: {
        ...nodeWithTsx('--fail-with', 'Error: the share /srv/nothing is not mounted (token s3cr3t-t0ken)'),
        env: { SHARE_TOKEN: 's3cr3t-t0ken' },
      },
    },
    stdioUser: 'nobody',
    stdioDir,
  };

  before(async () => {
    [desk, sessionDesk, fake] = await Promise.all([
      startHelpDesk(),
      startHelpDesk({ sessions: true }),
      startFakeAnthropic(),
    ]);
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-test', unavailableRetries: 0 },
        http: { allowHosts: ['127.0.0.1'] }, // the help desk listens on this machine
        mcp,
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
    await sessionDesk?.close();
    fs.rmSync(stdioDir, { recursive: true, force: true });
    fs.rmSync(marker, { force: true });
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
  /** What the run's log says, in order. */
  const logOf = async (runId: string): Promise<string[]> =>
    h.stack.knex('run_logs').where({ run_id: runId }).orderBy('id').pluck('message');
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

  it('refuses a server on an internal address the operator has not allowed, and any command a tenant names', async () => {
    const internal = await connectDesk('internal', desk.token, desk.url.replace('127.0.0.1', '127.0.0.2'));
    assert.equal(internal.status, 422);
    assert.match(internal.body.detail, /private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/);
    // What once ran as the web process's user before the refusal came back: a command the operator allowed, with
    // arguments of the tenant's.
    const write = `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`;
    for (const config of [
      { transport: 'stdio', command: process.execPath, args: ['-e', write] },
      { transport: 'stdio', server: 'calc', command: process.execPath, args: ['-e', write] },
      { transport: 'stdio', server: 'calc', args: ['-e', write] },
    ]) {
      const shell = await call('POST', '/connections', { name: 'shell', kind: 'mcp', config });
      assert.equal(shell.status, 422, JSON.stringify(shell.body));
      assert.equal(shell.body.code, 'invalid_body');
      assert.match(shell.body.detail, /names one of the servers the operator declares \("server"\), never a command/);
    }
    const undeclared = await call('POST', '/connections', {
      name: 'shell',
      kind: 'mcp',
      config: { transport: 'stdio', server: 'bash' },
    });
    assert.equal(undeclared.status, 422);
    assert.equal(undeclared.body.code, 'connection_failed');
    assert.match(
      undeclared.body.detail,
      /no stdio MCP server "bash" on this deployment: pick one of .*"calc", "broken"/,
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!fs.existsSync(marker), 'nothing a tenant sent ran');
    assert.equal((await call('GET', '/connections')).body.data.length, 1, 'none was saved');
  });

  it("lists the operator's stdio servers by name and description, never their commands or environments", async () => {
    const listed = await call('GET', '/mcp-servers');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data, [
      { name: 'calc', description: 'Adds numbers' },
      { name: 'broken', description: null },
    ]);
    assert.ok(!JSON.stringify(listed.body).includes('s3cr3t'), 'no environment');
    assert.ok(!JSON.stringify(listed.body).includes('--import'), 'no command line');
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

  it('a server that restarts between runs, and during one, fails no run: the session it forgot is opened again', async () => {
    const made = await connectDesk('desk', sessionDesk.token, sessionDesk.url);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const lookup = (customers: string[]) =>
      run(
        {
          name: 'look up at the desk',
          connections: ['desk'],
          nodes: [
            { kind: 'input', id: 'in', format: 'json', next: 'look' },
            {
              kind: 'tool',
              id: 'look',
              tool: 'mcp.desk.lookup_customer',
              arguments: { customer: '{{customer}}' },
              save_as: 'account',
            },
          ],
          policy: { approvals: { 'mcp.desk.*': { mode: 'never' } } },
        },
        customers.map((customer) => ({ customer })),
      );
    const first = await lookup(['acme']);
    assert.equal((await waitForRun(h, first.id)).status, 'completed');
    assert.equal((await items(h, first.id))[0].status, 'done');

    // Between two runs: the worker's session is one the restarted server never heard of (400).
    const sessions = sessionDesk.sessionsOpened;
    await sessionDesk.restart();
    const second = await lookup(['globex']);
    assert.equal((await waitForRun(h, second.id)).status, 'completed');
    const [row] = await items(h, second.id);
    assert.equal(row.status, 'done', JSON.stringify(row));
    assert.deepEqual(row.data.account, { plan: 'free', open_tickets: 0 });
    assert.equal(sessionDesk.sessionsOpened, sessions + 1, 'one new session, opened by the worker');
    assert.ok(
      (await logOf(second.id)).some((m) =>
        /^connection "desk": the MCP server no longer knew the session \(HTTP 400\): it restarted; opened a new session/.test(
          m,
        ),
      ),
      JSON.stringify(await logOf(second.id)),
    );

    // During a run, between its two items: each waits for a person, and the server restarts between their calls.
    sessionDesk.tickets.length = 0;
    const during = await run(
      {
        name: 'open tickets at the desk',
        connections: ['desk'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'ticket' },
          {
            kind: 'tool',
            id: 'ticket',
            tool: 'mcp.desk.create_ticket',
            arguments: { customer: '{{customer}}', subject: '{{subject}}' },
            save_as: 'ticket',
          },
        ],
      },
      [
        { customer: 'acme', subject: 'First item' },
        { customer: 'globex', subject: 'Second item' },
      ],
    );
    const approve = async () => {
      const approval = await waitForApproval(during.id);
      const decided = await call('POST', `/approvals/${approval.id}/decision`, { decision: 'approve' });
      assert.equal(decided.status, 200, JSON.stringify(decided.body));
    };
    await approve();
    for (let i = 0; i < 600 && sessionDesk.tickets.length < 1; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(sessionDesk.tickets.length, 1, 'the first item called before the restart');
    await sessionDesk.restart();
    await approve();
    assert.equal((await waitForRun(h, during.id)).status, 'completed');
    const rows = await items(h, during.id);
    assert.deepEqual(
      rows.map((r) => r.status),
      ['done', 'done'],
      JSON.stringify(rows.map((r) => r.error)),
    );
    assert.deepEqual(sessionDesk.tickets.map((t) => t.subject).sort(), ['First item', 'Second item']);
    assert.ok((await logOf(during.id)).some((m) => /no longer knew the session \(HTTP 400\)/.test(m)));
  });

  it('a server the operator declares, picked by name, is started over stdio and serves a model step', async () => {
    const made = await call('POST', '/connections', {
      name: 'calc',
      kind: 'mcp',
      config: { transport: 'stdio', server: 'calc' },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual(made.body.config, { transport: 'stdio', server: 'calc' });
    assert.equal(made.body.where, 'the server "calc"');
    const tested = await call('POST', `/connections/${made.body.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.deepEqual(tested.body.tools, ['add', 'whoami']);
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

  /** What the calculator says it was started with, asked by a run's tool node (as a worker starts it). */
  async function startedWith(): Promise<Json> {
    return (await askCalculator()).me;
  }
  async function askCalculator(): Promise<{ me: Json; runId: string }> {
    const started = await run(
      {
        name: 'who runs the calculator',
        connections: ['calc'],
        nodes: [
          { kind: 'input', id: 'in', format: 'lines', next: 'who' },
          { kind: 'tool', id: 'who', tool: 'mcp.calc.whoami', arguments: {}, save_as: 'me' },
        ],
        policy: { approvals: { 'mcp.calc.*': { mode: 'never' } } },
      },
      ['go'],
    );
    const done = await waitForRun(h, started.id);
    const [row] = await items(h, started.id);
    assert.equal(done.status, 'completed', JSON.stringify(row));
    return { me: row.data.me, runId: started.id };
  }

  it('a stdio server gets exactly PATH, HOME and TMPDIR (its own directory) and what the operator declares', async () => {
    process.env.CADRE_TEST_WORKER_SECRET = 'the worker keeps this';
    try {
      const me = await startedWith();
      assert.deepEqual(me.env, ['GREETING', 'HOME', 'PATH', 'TMPDIR'], 'no SHELL, TERM, USER, nor the worker');
      assert.equal(me.greeting, 'hello from the operator');
      assert.equal(path.dirname(me.cwd), stdioDir, 'a directory of its own under the configured one');
      assert.match(path.basename(me.cwd), /^calc-/);
      assert.equal(me.home, me.cwd);
      assert.equal(me.tmpdir, me.cwd);
      assert.equal(me.wrote, true, 'it can write in its directory');
    } finally {
      delete process.env.CADRE_TEST_WORKER_SECRET;
    }
  });

  it('a stdio server that exits is started again at the next call, and the run log says so', async () => {
    const before = await askCalculator();
    process.kill(before.me.pid, 'SIGKILL');
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 100 && alive(before.me.pid); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(!alive(before.me.pid), 'the server is gone');
    const after = await askCalculator();
    assert.notEqual(after.me.pid, before.me.pid, 'a new process');
    assert.equal(path.dirname(after.me.cwd), stdioDir, 'started as declared, in a fresh directory');
    assert.notEqual(after.me.cwd, before.me.cwd);
    const log = await logOf(after.runId);
    assert.ok(
      log.includes('connection "calc": the MCP server "calc" had stopped (it exited on SIGKILL); started it again'),
      JSON.stringify(log),
    );
  });

  it("values from a CSV fit the tool's typed arguments; a value that is none fails its item, naming it", async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'add the columns',
      connections: ['calc'],
      nodes: [
        { kind: 'input', id: 'in', format: 'csv', next: 'add' },
        { kind: 'tool', id: 'add', tool: 'mcp.calc.add', arguments: { a: '{{a}}', b: '{{b}}' }, save_as: 'sum' },
      ],
      policy: { approvals: { 'mcp.calc.*': { mode: 'never' } } },
    });
    const started = await startTestRun(h, ws, agent.id, 'a,b\n2.5,4\nseven,1\n');
    await waitForRun(h, started.id);
    const [sum, seven] = await items(h, started.id);
    assert.equal(sum.status, 'done', JSON.stringify(sum));
    assert.deepEqual(sum.data.sum, { text: '6.5' });
    assert.equal(seven.status, 'failed');
    assert.match(seven.error, /mcp\.calc\.add: argument "a": "seven" is not a number/);
  });

  it('a stdio server runs as an unprivileged user when the worker runs as root', async function () {
    if (!isRoot) {
      this.test!.title += ' (skipped: these tests do not run as root, so there is no user to change to)';
      this.skip();
    }
    const me = await startedWith();
    const nobody = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());
    assert.equal(me.uid, nobody);
    assert.notEqual(me.uid, 0);
    assert.notEqual(me.gid, 0);
    assert.ok(!me.groups.includes(0), `no supplementary root group: ${me.groups}`);
    assert.equal(fs.statSync(me.cwd).uid, nobody, 'its directory is its own');
  });

  it('a server that fails to start shows the end of its stderr (declared secrets masked), when made and tested', async () => {
    const made = await call('POST', '/connections', {
      name: 'broken',
      kind: 'mcp',
      config: { transport: 'stdio', server: 'broken' },
    });
    assert.equal(made.status, 422);
    assert.equal(made.body.code, 'connection_failed');
    assert.match(made.body.detail, /the MCP server "broken" exited with code 3/);
    assert.match(made.body.detail, /starting the calculator\.\.\.\nError: the share \/srv\/nothing is not mounted/);
    assert.ok(!made.body.detail.includes('s3cr3t-t0ken'), made.body.detail);
    assert.match(made.body.detail, /\(token \[redacted\]\)/);

    // One saved when it worked (say), tested now: the same reason, and the connection is marked failing.
    const row = await createConnection(h.stack.knex, {
      workspace_id: ws,
      name: 'broken',
      kind: 'mcp',
      config: { transport: 'stdio', server: 'broken' },
      credentials_sealed: loadSecretBox(h.config).seal(JSON.stringify({ headers: {} })),
      created_by: 'test',
    });
    const tested = await call('POST', `/connections/${row.id}/test`);
    assert.equal(tested.body.ok, false);
    assert.match(tested.body.detail, /exited with code 3.*\nstarting the calculator\.\.\.\nError: the share/s);
    const listed = await call('GET', `/connections/${row.id}`);
    assert.equal(listed.body.status, 'failing');
    await call('DELETE', `/connections/${row.id}`);
  });

  it('a connection stored with a command and arguments never runs: test and runs say to pick a declared server', async () => {
    const write = `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`;
    const row = await createConnection(h.stack.knex, {
      workspace_id: ws,
      name: 'legacy',
      kind: 'mcp',
      config: { transport: 'stdio', command: process.execPath, args: ['-e', write] },
      credentials_sealed: loadSecretBox(h.config).seal(JSON.stringify({ headers: {} })),
      created_by: 'test',
    });
    const answered = await call('GET', `/connections/${row.id}`);
    assert.deepEqual(answered.body.config, { transport: 'stdio', command: process.execPath, args: ['-e', write] });
    assert.match(answered.body.where, /no longer allowed/);
    const tested = await call('POST', `/connections/${row.id}/test`);
    assert.equal(tested.body.ok, false);
    assert.match(
      tested.body.detail,
      /names a command \(".*node"\), which connections may no longer choose: edit it and pick one of the servers the operator declares \("calc", "broken"\)/,
    );
    const tools = await call('GET', `/connections/${row.id}/tools`);
    assert.equal(tools.status, 422);
    assert.match(tools.body.detail, /no longer choose/);

    const started = await run(
      {
        name: 'legacy',
        connections: ['legacy'],
        nodes: [
          { kind: 'input', id: 'in', format: 'lines', next: 'add' },
          { kind: 'tool', id: 'add', tool: 'mcp.legacy.add', arguments: { a: 1, b: 2 }, save_as: 'sum' },
        ],
        policy: { approvals: { 'mcp.legacy.*': { mode: 'never' } } },
      },
      ['go'],
    );
    await waitForRun(h, started.id);
    const [item] = await items(h, started.id);
    assert.equal(item.status, 'failed');
    assert.match(item.error, /connection "legacy": this connection names a command .* pick one of the servers/);
    assert.ok(!fs.existsSync(marker), 'the stored command did not run');

    // Picking a declared server replaces the command.
    const fixed = await call('PATCH', `/connections/${row.id}`, { config: { server: 'calc' } });
    assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
    assert.deepEqual(fixed.body.config, { transport: 'stdio', server: 'calc' });
    assert.equal(fixed.body.status, 'connected');
    await call('DELETE', `/connections/${row.id}`);
  });

  it('refuses to start a server in a directory its unprivileged user cannot reach, saying what to change', async function () {
    if (!isRoot) {
      this.test!.title += ' (skipped: only a worker running as root changes user)';
      this.skip();
    }
    const closed = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-mcp-closed-')); // 0700, root's
    try {
      await assert.rejects(
        connectMcp(
          { transport: 'stdio', server: 'calc' },
          { headers: {} },
          { allowHosts: [], mcpStdio: { ...mcp, stdioDir: path.join(closed, 'tmp', 'mcp') } },
        ),
        /run as nobody \(uid \d+\), who cannot reach .*cadre-mcp-closed-\w+ \(mode 700\).*chmod o\+x/,
      );
    } finally {
      fs.rmSync(closed, { recursive: true, force: true });
    }
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
