// Connections to SQL databases, against real servers (Debian's PostgreSQL and MariaDB): made through the API (tested
// before they are saved, credentials sealed and never answered), used by tool nodes and by a model's tool calls under
// the agent's approval policy, and refused with a message a person can act on when they are missing or read-only.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
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
import { startMariaDb, startPostgresServer, type DatabaseServer } from '../support/servers';
import { buildSqlClient } from '../../activities/connectors/sql/client';
import { sqlConfigSchema } from '../../model/connection';
import {
  apiErrors,
  itemOf,
  reply,
  startFakeAnthropic,
  toolResultsOf,
  toolUse,
  turnOf,
  type FakeAnthropic,
} from '../fakes/anthropic';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('connections: SQL databases', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let fake: FakeAnthropic;
  let key: string;
  let ws: string;
  const servers: Record<'postgres' | 'mysql', DatabaseServer> = {} as never;

  before(async () => {
    [servers.postgres, servers.mysql, fake] = await Promise.all([
      startPostgresServer(),
      startMariaDb(),
      startFakeAnthropic(),
    ]);
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-test', unavailableRetries: 0 },
        http: { allowHosts: ['127.0.0.1'] }, // the test's database servers are on this machine
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
    for (const db of Object.values(servers)) {
      await db.admin.schema.createTable('orders', (t) => {
        t.increments('id');
        t.string('customer').notNullable();
        t.decimal('total', 10, 2).notNullable();
      });
      await db.admin('orders').insert([
        { customer: 'acme', total: 120.5 },
        { customer: 'acme', total: 80 },
        { customer: 'globex', total: 15 },
      ]);
      await db.admin.raw(db === servers.postgres ? 'grant all on orders, orders_id_seq to app' : 'select 1');
    }
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await fake?.close();
    await Promise.all(Object.values(servers).map((s) => s.stop()));
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
  const configOf = (db: DatabaseServer, extra: Json = {}) => ({
    host: db.host,
    port: db.port,
    database: db.database,
    user: db.user,
    ...extra,
  });
  const connect = (name: string, kind: 'postgres' | 'mysql', extra: Json = {}) =>
    call('POST', '/connections', {
      name,
      kind,
      config: configOf(servers[kind], extra),
      credentials: { password: servers[kind].password },
    });

  async function runOf(spec: Json, input: unknown[]) {
    const agent = await createLiveAgent(h, ws, spec);
    const started = await startTestRun(h, ws, agent.id, JSON.stringify(input));
    return { agent, started };
  }
  const queryAgent = (connection: string) => ({
    name: `orders of a customer (${connection})`,
    connections: [connection],
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'orders' },
      {
        kind: 'tool',
        id: 'orders',
        tool: 'sql.query',
        arguments: {
          connection,
          sql: 'select id, customer, total from orders where customer = ? order by id',
          params: ['{{customer}}'],
        },
        save_as: 'orders',
      },
    ],
  });

  for (const kind of ['postgres', 'mysql'] as const) {
    describe(kind === 'postgres' ? 'PostgreSQL' : 'MariaDB', () => {
      const name = `shop-${kind}`;

      it('is tested before it is saved, and its password is never answered or stored in plain text', async () => {
        const wrong = await call('POST', '/connections', {
          name,
          kind,
          config: configOf(servers[kind]),
          credentials: { password: 'not the password' },
        });
        assert.equal(wrong.status, 422);
        assert.equal(wrong.body.code, 'connection_failed');
        assert.match(wrong.body.detail, /could not connect/);
        assert.equal(await h.stack.knex('connections').where({ workspace_id: ws, name }).first(), undefined);

        const made = await connect(name, kind);
        assert.equal(made.status, 201, JSON.stringify(made.body));
        assert.equal(made.body.status, 'connected');
        assert.deepEqual(made.body.can, ['list tables', 'read rows'], 'read-only unless writes are granted');
        const everything = JSON.stringify([made.body, (await call('GET', '/connections')).body]);
        assert.ok(!everything.includes(servers[kind].password), 'no answer carries the password');
        const row = await h.stack.knex('connections').where({ id: made.body.id }).first();
        assert.ok(!JSON.stringify(row).includes(servers[kind].password), 'the row holds it sealed');

        const again = await connect(name, kind);
        assert.equal(again.status, 409);
        assert.equal(again.body.code, 'connection_name_taken');
        const tested = await call('POST', `/connections/${made.body.id}/test`);
        assert.equal(tested.status, 200);
        assert.equal(tested.body.ok, true);
        assert.match(tested.body.server_version, kind === 'postgres' ? /^PostgreSQL/ : /MariaDB/);
      });

      it('a tool node queries it with the item values as parameters; each item gets its rows', async () => {
        const { started } = await runOf(queryAgent(name), [
          { customer: 'acme' },
          { customer: 'globex' },
          { customer: "nobody' or '1'='1" },
        ]);
        const done = await waitForRun(h, started.id);
        assert.equal(done.status, 'completed');
        const rows = await items(h, started.id);
        assert.deepEqual(
          rows.map((r) => r.data.orders.rows.map((o: Json) => [o.customer, Number(o.total)])),
          [
            [
              ['acme', 120.5],
              ['acme', 80],
            ],
            [['globex', 15]],
            [],
          ],
          'an injected value is a value, not SQL',
        );
        const used = await call('GET', '/connections');
        assert.ok(used.body.data.find((c: Json) => c.name === name).last_used_at, 'last used is recorded');
      });

      it('refuses writes on a read-only connection, and names the setting that allows them', async () => {
        const sneaky = queryAgent(name);
        (sneaky.nodes[1] as Json).arguments.sql = 'delete from orders where customer = ?';
        const { started } = await runOf(sneaky, [{ customer: 'acme' }]);
        await waitForRun(h, started.id);
        const [row] = await items(h, started.id);
        assert.equal(row.status, 'failed');
        assert.match(row.error, /only reads/);
        assert.equal((await servers[kind].admin('orders').where({ customer: 'acme' })).length, 2);

        const insert = insertAgent(name, 'read-only insert');
        const { started: second } = await runOf(insert, [{ customer: 'initech', total: 5 }]);
        await waitForRun(h, second.id, (r) => ['completed', 'failed', 'needs_review'].includes(String(r.status)));
        const [failed] = await items(h, second.id);
        assert.equal(failed.status, 'failed', 'refused at once, not held for a reviewer');
        assert.match(failed.error, /is read-only: an admin can allow writes in Integrations \(allow_writes\)/);
        assert.deepEqual(await h.stack.knex('approvals').where({ run_id: second.id }), [], 'no reviewer was asked');
        assert.equal((await servers[kind].admin('orders').where({ customer: 'initech' })).length, 0);
      });

      it('a model is not offered sql.insert through a read-only connection, and its call asks no reviewer', async () => {
        fake.setHandler((body) =>
          turnOf(body) === 0
            ? reply([
                toolUse('sql_insert', { connection: name, table: 'orders', rows: [{ customer: 'hooli', total: 1 }] }),
              ])
            : reply([toolUse('submit_output', { said: String(toolResultsOf(body)[0].content) })]),
        );
        const { started } = await runOf(
          {
            name: `model insert (${kind})`,
            connections: [name],
            nodes: [
              { kind: 'input', id: 'in', format: 'json', next: 'ask' },
              {
                kind: 'llm',
                id: 'ask',
                instructions: 'Book the order.',
                tools: ['sql.query', 'sql.insert'],
                output_schema: { type: 'object', properties: { said: { type: 'string' } }, required: ['said'] },
              },
            ],
          },
          [{ customer: 'hooli' }],
        );
        await waitForRun(h, started.id, (r) => ['completed', 'failed', 'needs_review'].includes(String(r.status)));
        assert.deepEqual(
          fake.requests[0].body.tools!.map((t) => t.name).filter((t) => t.startsWith('sql_')),
          ['sql_query'],
          'no write tool for a read-only connection',
        );
        const [row] = await items(h, started.id);
        assert.equal(row.status, 'done', JSON.stringify(row));
        assert.match(row.data.said, /unknown tool sql_insert/);
        assert.deepEqual(await h.stack.knex('approvals').where({ run_id: started.id }), []);
        assert.equal((await servers[kind].admin('orders').where({ customer: 'hooli' })).length, 0);
      });

      it("the session of a read-only connection is read-only and time-limited by the server's own defaults", async () => {
        const client = buildSqlClient(
          kind,
          sqlConfigSchema.parse({ ...configOf(servers[kind]), statement_timeout_ms: 2000 }),
          servers[kind].password,
        );
        try {
          // Straight on a pooled session, with no transaction of Cadre's around it.
          await assert.rejects(
            client.knex.raw("insert into orders (customer, total) values ('direct', 1)"),
            (err: Json) => ['25006', 'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION'].includes(err.code),
          );
          await assert.rejects(
            client.knex.raw(kind === 'postgres' ? 'select pg_sleep(4)' : 'select sleep(4)'),
            (err: Json) => /statement timeout|max_statement_time/.test(err.message),
          );
        } finally {
          await client.knex.destroy();
        }
        assert.equal((await servers[kind].admin('orders').where({ customer: 'direct' })).length, 0);
      });

      it('sql.query runs one statement that reads: writes, second statements and timeout escapes are refused', async () => {
        const guards = [`guard-${kind}`, `guardw-${kind}`];
        for (const [i, guard] of guards.entries()) {
          const made = await connect(guard, kind, {
            statement_timeout_ms: 2000,
            row_limit: 100,
            allow_writes: i === 1,
          });
          assert.equal(made.status, 201, JSON.stringify(made.body));
        }
        const marker = path.join(os.tmpdir(), `cadre-copy-${kind}-${Date.now()}`);
        const attacks: [string, RegExp][] =
          kind === 'postgres'
            ? [
                [
                  "select 1; commit; insert into orders (customer, total) values ('mallory', 1)",
                  /one statement per call/,
                ],
                ["rollback; insert into orders (customer, total) values ('mallory', 2)", /only reads: .* not ROLLBACK/],
                [
                  "set transaction read write; insert into orders (customer, total) values ('mallory', 3)",
                  /only reads: .* not SET/,
                ],
                ['set transaction read write', /only reads: .* not SET/],
                [
                  "with w as (insert into orders (customer, total) values ('mallory', 4) returning id) select * from w",
                  /read-only transaction/,
                ],
                [
                  "do $$ begin insert into orders (customer, total) values ('mallory', 5); end $$",
                  /only reads: .* not DO/,
                ],
                ['end; set statement_timeout = 0; select pg_sleep(4)', /only reads: .* not END/],
                ['select 1; set statement_timeout = 0; select pg_sleep(4)', /one statement per call/],
                ["select set_config('statement_timeout', '0', false), pg_sleep(4)", /ran longer than .* \(2000 ms\)/],
                [`copy (select 1) to program 'touch ${marker}'`, /only reads: .* not COPY/],
              ]
            : [
                ["select 1; insert into orders (customer, total) values ('mallory', 1)", /SQL syntax/],
                [
                  "SET SESSION TRANSACTION READ WRITE; INSERT INTO orders (customer, total) VALUES ('mallory', 2)",
                  /only reads: .* not SET/,
                ],
                ['SET SESSION TRANSACTION READ WRITE', /only reads: .* not SET/],
                [
                  'BEGIN NOT ATOMIC COMMIT; SET SESSION TRANSACTION READ WRITE; START TRANSACTION; ' +
                    "INSERT INTO orders (customer, total) VALUES ('mallory', 3); COMMIT; END",
                  /only reads: .* not BEGIN/,
                ],
                [
                  "EXECUTE IMMEDIATE 'INSERT INTO orders (customer, total) VALUES (''mallory'', 4)'",
                  /only reads: .* not EXECUTE/,
                ],
                ['select 1 /*!, (select 1 from orders) */', /executable comments/],
                ['SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(4)', /only reads: .* not SET/],
                ['select sleep(4)', /ran longer than .* \(2000 ms\)/],
              ];
        fake.setHandler((body) => {
          const item = itemOf(body) as { sql: string; connection: string };
          if (turnOf(body) === 0) return reply([toolUse('sql_query', { connection: item.connection, sql: item.sql })]);
          const [result] = toolResultsOf(body);
          return reply([toolUse('submit_output', { refused: result.is_error === true, said: String(result.content) })]);
        });
        const { started } = await runOf(
          {
            name: `attacks (${kind})`,
            connections: guards,
            nodes: [
              { kind: 'input', id: 'in', format: 'json', next: 'ask' },
              {
                kind: 'llm',
                id: 'ask',
                instructions: 'Run the statement.',
                tools: ['sql.query'],
                output_schema: {
                  type: 'object',
                  properties: { refused: { type: 'boolean' }, said: { type: 'string' } },
                  required: ['refused', 'said'],
                },
              },
            ],
          },
          guards.flatMap((connection) => attacks.map(([sql]) => ({ sql, connection }))),
        );
        const done = await waitForRun(h, started.id, undefined, 120_000);
        assert.equal(done.status, 'completed');
        const rows = await items(h, started.id);
        for (const row of rows) {
          const [, expected] = attacks.find(([sql]) => sql === row.data.sql)!;
          assert.equal(row.data.refused, true, `${row.data.connection}: ${row.data.sql} answered ${row.data.said}`);
          assert.match(row.data.said, expected, `${row.data.connection}: ${row.data.sql}`);
        }
        assert.equal((await servers[kind].admin('orders').where({ customer: 'mallory' })).length, 0, 'nothing written');
        assert.equal(fs.existsSync(marker), false, 'no program ran');
      });

      it('stops reading at the row limit: the row after it is never asked for', async () => {
        // The 102nd row takes a minute to make; a query read to its end would run into the timeout instead.
        const late =
          kind === 'postgres'
            ? "select g, case when g > 101 then (select 'late' from pg_sleep(60)) end as late from generate_series(1, 200) g"
            : "select seq, repeat('x', 20000) as pad, if(seq > 101, sleep(60), 0) as late from seq_1_to_200";
        const exact = kind === 'postgres' ? 'select g from generate_series(1, 100) g' : 'select seq from seq_1_to_100';
        const connection = `guard-${kind}`;
        const agent = {
          name: `row limit (${kind})`,
          connections: [connection],
          nodes: [
            { kind: 'input', id: 'in', format: 'json', next: 'exact' },
            {
              kind: 'tool',
              id: 'exact',
              tool: 'sql.query',
              arguments: { connection, sql: exact },
              save_as: 'exact',
              next: 'late',
            },
            { kind: 'tool', id: 'late', tool: 'sql.query', arguments: { connection, sql: late }, save_as: 'late' },
          ],
        };
        const { started } = await runOf(agent, [{ customer: 'acme' }]);
        await waitForRun(h, started.id);
        const [row] = await items(h, started.id);
        assert.equal(row.status, 'failed');
        assert.match(row.error, new RegExp(`more than 100 rows, more than connection "guard-${kind}" allows`));
        assert.equal(row.data.exact.row_count, 100, 'as many rows as the limit is an answer');
      });

      it('refuses a user the server lets run programs or write files, whom no read-only session stops', async () => {
        const admin = servers[kind].admin;
        if (kind === 'postgres') {
          await admin.raw("create role boss login superuser password 'boss-secret-1'");
          await admin.raw("create role runner login password 'runner-secret-1'");
          await admin.raw('grant pg_execute_server_program to runner');
          // What a read-only session leaves a superuser: COPY … TO PROGRAM runs its program.
          const marker = path.join(os.tmpdir(), `cadre-superuser-${Date.now()}`);
          const boss = knexFactory({
            client: 'pg',
            connection: {
              ...configOf(servers[kind]),
              user: 'boss',
              password: 'boss-secret-1',
              options: '-c default_transaction_read_only=on',
            },
          });
          try {
            await boss.raw(`copy (select 1) to program 'touch ${marker}'`);
          } finally {
            await boss.destroy();
          }
          assert.ok(fs.existsSync(marker), 'default_transaction_read_only does not stop COPY … TO PROGRAM');
          fs.rmSync(marker, { force: true });
          for (const [user, password] of [
            ['boss', 'boss-secret-1'],
            ['runner', 'runner-secret-1'],
          ]) {
            const refused = await call('POST', '/connections', {
              name: `powerful-${user}`,
              kind,
              config: { ...configOf(servers[kind]), user },
              credentials: { password },
            });
            assert.equal(refused.status, 422, JSON.stringify(refused.body));
            assert.equal(refused.body.code, 'connection_failed');
            assert.match(
              refused.body.detail,
              new RegExp(`the database user "${user}" is a superuser or may run programs`),
            );
          }
        } else {
          await admin.raw("create user 'filer'@'%' identified by 'filer-secret-1'");
          await admin.raw("grant file on *.* to 'filer'@'%'");
          await admin.raw("grant select on shop.* to 'filer'@'%'");
          const refused = await call('POST', '/connections', {
            name: 'powerful-filer',
            kind,
            config: { ...configOf(servers[kind]), user: 'filer' },
            credentials: { password: 'filer-secret-1' },
          });
          assert.equal(refused.status, 422, JSON.stringify(refused.body));
          assert.match(refused.body.detail, /the database user "filer@%" has the FILE privilege/);
        }
      });

      it('with writes allowed, an insert waits for approval and then writes its row exactly once', async () => {
        const id = (await call('GET', '/connections')).body.data.find((c: Json) => c.name === name).id;
        const patched = await call('PATCH', `/connections/${id}`, { config: { allow_writes: true } });
        assert.equal(patched.status, 200, JSON.stringify(patched.body));
        assert.deepEqual(patched.body.can, ['list tables', 'read rows', 'insert rows', 'update rows']);

        const { started } = await runOf(insertAgent(name, 'insert'), [{ customer: 'umbrella', total: 42 }]);
        const pending = await waitForApproval(started.id);
        assert.equal(pending.tool, 'sql.insert');
        assert.deepEqual(pending.arguments.rows, [{ customer: 'umbrella', total: 42 }]);
        assert.equal((await servers[kind].admin('orders').where({ customer: 'umbrella' })).length, 0, 'not before');
        await decide(pending.id, 'approve');
        const done = await waitForRun(h, started.id);
        assert.equal(done.status, 'completed');
        assert.equal((await servers[kind].admin('orders').where({ customer: 'umbrella' })).length, 1);
      });
    });
  }

  const insertAgent = (connection: string, name: string) => ({
    name,
    connections: [connection],
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'write' },
      {
        kind: 'tool',
        id: 'write',
        tool: 'sql.insert',
        arguments: { connection, table: 'orders', rows: [{ customer: '{{customer}}', total: '{{total}}' }] },
      },
    ],
  });
  async function waitForApproval(runId: string): Promise<Json> {
    for (let i = 0; i < 600; i++) {
      const list = await call('GET', `/approvals?run_id=${runId}&status=pending`);
      if (list.body.data.length > 0) return list.body.data[0];
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no approval came for run ${runId}`);
  }
  const decide = async (approvalId: string, decision: string) => {
    const res = await call('POST', `/approvals/${approvalId}/decision`, { decision });
    assert.ok(res.status < 300, JSON.stringify(res.body));
  };

  describe('in runs and agents', () => {
    it("a model's tool call queries a connection the agent lists, and only those are offered to it", async () => {
      fake.setHandler((body) =>
        turnOf(body) === 0
          ? reply([
              toolUse('sql_query', {
                connection: 'shop-postgres',
                sql: 'select sum(total) as spent from orders where customer = ?',
                params: ['acme'],
              }),
            ])
          : reply([
              toolUse('submit_output', {
                spent: Number(JSON.parse(String(toolResultsOf(body)[0].content)).rows[0].spent),
              }),
            ]),
      );
      const { started } = await runOf(
        {
          name: 'spend',
          connections: ['shop-postgres'],
          nodes: [
            { kind: 'input', id: 'in', format: 'json', next: 'ask' },
            {
              kind: 'llm',
              id: 'ask',
              instructions: 'How much has this customer spent?',
              tools: ['sql.query'],
              output_schema: { type: 'object', properties: { spent: { type: 'number' } }, required: ['spent'] },
            },
          ],
        },
        [{ customer: 'acme' }],
      );
      const done = await waitForRun(h, started.id);
      assert.equal(done.status, 'completed');
      const [row] = await items(h, started.id);
      assert.equal(row.data.spent, 200.5);
      const offered = fake.requests[0].body.tools!.find((t) => t.name === 'sql_query')!;
      assert.deepEqual((offered.input_schema as Json).properties.connection.enum, ['shop-postgres']);
    });

    it('an agent cannot go live while a connection it lists is missing, and a run that meets a removed one says so', async () => {
      const made = await connect('short-lived', 'postgres');
      assert.equal(made.status, 201);
      const draft = await createLiveAgent(h, ws, queryAgent('short-lived'), 'draft');
      await h.stack.knex('agents').where({ id: draft.id }).update({ state: 'ready' });
      assert.equal((await call('DELETE', `/connections/${made.body.id}`)).status, 204);

      const live = await call('POST', `/agents/${draft.id}/state`, { state: 'live' });
      assert.equal(live.status, 409);
      assert.match(
        live.body.detail,
        /"short-lived", not connected in this workspace: connect it in Integrations first/,
      );

      await h.stack.knex('agents').where({ id: draft.id }).update({ state: 'live' });
      const started = await startTestRun(h, ws, draft.id, JSON.stringify([{ customer: 'acme' }]));
      await waitForRun(h, started.id);
      const [row] = await items(h, started.id);
      assert.equal(row.status, 'failed');
      assert.match(row.error, /there is no connection "short-lived" in this workspace .*connect it in Integrations/);
    });

    it('refuses agents that paste item values into SQL, or act through connections they do not list', async () => {
      const pasted = queryAgent('shop-postgres');
      (pasted.nodes[1] as Json).arguments.sql = "select * from orders where customer = '{{customer}}'";
      const refused = await call('POST', '/agents', pasted);
      assert.equal(refused.status, 422);
      assert.match(refused.body.detail, /write \? in the statement and the values in "params"/);

      const unlisted = { ...queryAgent('shop-postgres'), connections: [] };
      const second = await call('POST', '/agents', unlisted);
      assert.equal(second.status, 422);
      assert.match(second.body.detail, /"shop-postgres", which the agent's "connections" do not list/);
    });
  });
});
