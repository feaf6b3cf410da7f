// The DuckDB warehouse connector against real files: a directory of CSV and Parquet files connected through the API
// (only inside the workspace's own directory under the roots the operator allows), queried read-only by tool nodes
// with each item's values as parameters, and refusing writes, other files (another workspace's, the worker's
// temporary directory) and answers over the row limit with messages a person can act on.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, rmdir, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { createHarness, createTestWorkspace, items, startApi, waitForRun, type Harness } from '../../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';

describe('connectors: DuckDB warehouse', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let root: string;
  let outside: string;
  /** The workspace's own directory under the root: `<root>/<workspace id>`. */
  let own: string;
  let other: { workspace: { id: string }; key: string };

  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'cadre-warehouse-'));
    outside = await mkdtemp(path.join(tmpdir(), 'cadre-elsewhere-'));
    await writeFile(path.join(outside, 'secret.csv'), 'secret\nhunter2\n');

    h = await createHarness({ config: { warehouse: { dirs: [root] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    c = connectorApi(h, api.url, t.key, t.workspace.id);
    other = await createTestWorkspace(h);

    own = path.join(root, t.workspace.id);
    const sales = path.join(own, 'sales');
    await mkdir(sales, { recursive: true });
    await writeFile(path.join(sales, 'customers.csv'), 'id,name,country\n1,Acme,DE\n2,Globex,US\n3,Initech,US\n');
    // The orders table is Parquet, written by DuckDB itself.
    const maker = await (await DuckDBInstance.create(':memory:')).connect();
    await maker.run(
      `copy (select * from (values (1, 1, 120.5::double), (2, 1, 80.0::double), (3, 2, 15.0::double)) as t(id, customer_id, total))
       to '${path.join(sales, 'orders.parquet')}' (format parquet)`,
    );
    maker.closeSync();
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await rm(root, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  const queryAgent = (sql: string, params: unknown[] = []) => ({
    name: 'warehouse query',
    connections: ['sales'],
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'q' },
      { kind: 'tool', id: 'q', tool: 'duckdb.query', arguments: { connection: 'sales', sql, params }, save_as: 'q' },
    ],
  });
  async function runQuery(sql: string, input: unknown[], params: unknown[] = []) {
    const { started } = await c.runOf(queryAgent(sql, params), input);
    await waitForRun(h, started.id);
    return items(h, started.id);
  }

  it('connects only directories the operator allows, and says what it found', async () => {
    const elsewhere = await c.call('POST', '/connections', {
      name: 'elsewhere',
      kind: 'duckdb',
      config: { path: outside },
    });
    assert.equal(elsewhere.status, 422);
    assert.match(elsewhere.body.detail, /outside the directories this deployment allows \(CADRE_WAREHOUSE_DIRS/);
    const escape = await c.call('POST', '/connections', {
      name: 'escape',
      kind: 'duckdb',
      config: { path: path.join(root, '..', path.basename(outside)) },
    });
    assert.equal(escape.status, 422, 'a relative way out is resolved before it is checked');

    const shared = await c.call('POST', '/connections', { name: 'everyone', kind: 'duckdb', config: { path: root } });
    assert.equal(shared.status, 422, 'the root is every workspace’s: only a workspace’s own directory is connected');

    const made = await c.connect('sales', 'duckdb', { path: 'sales' });
    assert.equal(made.config.path, path.join(own, 'sales'), 'stored as the real path, in the workspace’s directory');
    assert.deepEqual(made.can, ['list tables', 'query']);
    const tested = await c.call('POST', `/connections/${made.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.match(tested.body.server_version, /^DuckDB v?\d/);
    assert.deepEqual(tested.body.found, ['customers', 'orders']);

    const connectors = await c.call('GET', '/connectors');
    const duckdb = connectors.body.data.find((k: Json) => k.kind === 'duckdb');
    assert.deepEqual(
      duckdb.tools.map((t: Json) => [t.name, t.approval_default]),
      [
        ['duckdb.list_tables', 'never'],
        ['duckdb.query', 'never'],
      ],
    );
    assert.deepEqual(duckdb.config_schema.required, ['path']);
  });

  it('a tool node joins the files with each item’s values as parameters', async () => {
    const rows = await runQuery(
      `select c.name, count(*) as orders, sum(o.total) as spent
       from orders o join customers c on c.id = o.customer_id where c.country = ? group by c.name order by c.name`,
      [{ country: 'DE' }, { country: 'US' }, { country: "DE' or '1'='1" }],
      ['{{country}}'],
    );
    assert.deepEqual(
      rows.map((r) => [r.status, r.data.q.rows]),
      [
        ['done', [{ name: 'Acme', orders: 2, spent: 200.5 }]],
        ['done', [{ name: 'Globex', orders: 1, spent: 15 }]],
        ['done', []],
      ],
    );
  });

  it('lists its tables with their columns', async () => {
    const { started } = await c.runOf(
      {
        name: 'tables',
        connections: ['sales'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 't' },
          { kind: 'tool', id: 't', tool: 'duckdb.list_tables', arguments: { connection: 'sales' }, save_as: 't' },
        ],
      },
      [{}],
    );
    await waitForRun(h, started.id);
    const [row] = await items(h, started.id);
    const orders = row.data.t.tables.find((t: Json) => t.table === 'orders');
    assert.deepEqual(
      orders.columns.map((col: Json) => col.name),
      ['id', 'customer_id', 'total'],
    );
  });

  it('only reads: writes, other files and settings are refused, and nothing changes', async () => {
    const target = path.join(own, 'sales', 'stolen.csv');
    const attempts = [
      [`copy (select * from customers) to '${target}'`, /only reads: give one SELECT statement/],
      [`select * from read_csv('${path.join(outside, 'secret.csv')}')`, /Permission Error|disabled by configuration/],
      ['set enable_external_access = true', /only reads/],
      ['select 1; select 2', /give one statement, not 2/],
      ['select * from no_such_table', /no_such_table/],
    ] as const;
    const rows = await runQuery(attempts[0][0], [{}]);
    assert.equal(rows[0].status, 'failed');
    assert.match(rows[0].error, attempts[0][1]);
    for (const [sql, error] of attempts.slice(1)) {
      const [row] = await runQuery(sql, [{}]);
      assert.equal(row.status, 'failed', sql);
      assert.match(row.error, error, sql);
    }
    await assert.rejects(
      import('node:fs/promises').then((fs) => fs.stat(target)),
      'no file was written',
    );
  });

  it("reads only its workspace's directory: not another workspace's, nor the worker's temporary directory", async () => {
    // The other workspace's directory is made on its first use, and its files are its own.
    const b = connectorApi(h, api.url, other.key, other.workspace.id);
    const first = await b.call('POST', '/connections', { name: 'everything', kind: 'duckdb', config: { path: '.' } });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const otherDir = path.join(root, other.workspace.id);
    assert.equal(first.body.config.path, otherDir);
    assert.ok((await stat(otherDir)).isDirectory(), 'made on first use');
    await mkdir(path.join(otherDir, 'private'));
    await writeFile(path.join(otherDir, 'private', 'payroll.csv'), 'name,salary\nBea,9000\n');
    const payroll = await b.connect('payroll', 'duckdb', { path: 'private' });
    assert.equal(payroll.config.path, path.join(otherDir, 'private'));

    // This workspace can neither connect it, by its path or by climbing out of its own directory...
    for (const given of [path.join(otherDir, 'private'), path.join('..', other.workspace.id, 'private')]) {
      const refused = await c.call('POST', '/connections', { name: 'theirs', kind: 'duckdb', config: { path: given } });
      assert.equal(refused.status, 422, given);
      assert.match(refused.body.detail, /outside the directories this deployment allows/, given);
    }
    // ...nor change its own connection to point there...
    const sales = (await c.call('GET', '/connections')).body.data.find((x: Json) => x.name === 'sales');
    const moved = await c.call('PATCH', `/connections/${sales.id}`, {
      config: { path: path.join(otherDir, 'private') },
    });
    assert.equal(moved.status, 422);

    // ...nor read its files, or the worker's .tmp/ (DuckDB's temporary directory), from SQL.
    const tmp = path.resolve('.tmp');
    const madeTmp = !existsSync(tmp);
    const tmpFile = `cadre-duckdb-${randomUUID()}.csv`;
    await mkdir(tmp, { recursive: true });
    await writeFile(path.join(tmp, tmpFile), 'token\nworker-secret\n');
    try {
      for (const file of [
        path.join(otherDir, 'private', 'payroll.csv'),
        path.join(tmp, tmpFile),
        `.tmp/${tmpFile}`,
        path.join(own, 'sales', '..', '..', other.workspace.id, 'private', 'payroll.csv'),
      ]) {
        const [row] = await runQuery(`select * from read_csv('${file}')`, [{}]);
        assert.equal(row.status, 'failed', file);
        assert.match(row.error, /Permission Error|disabled by configuration/, file);
      }
    } finally {
      await rm(path.join(tmp, tmpFile), { force: true });
      if (madeTmp) await rmdir(tmp).catch(() => undefined);
    }
  });

  it('an answer over the row limit fails and says how to narrow it', async () => {
    const id = (await c.call('GET', '/connections')).body.data.find((x: Json) => x.name === 'sales').id;
    const patched = await c.call('PATCH', `/connections/${id}`, { config: { row_limit: 2 } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const [over, within] = await Promise.all([
      runQuery('select * from customers', [{}]),
      runQuery('select * from customers limit 2', [{}]),
    ]);
    assert.equal(over[0].status, 'failed');
    assert.match(over[0].error, /more than 2 rows .*row limit.*narrow it/);
    assert.equal(within[0].data.q.rows.length, 2);
  });
});
