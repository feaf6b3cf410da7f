// The embedded database's connection multiplexer: many pg clients, one PGlite backend, no interference.
import assert from 'node:assert/strict';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { servePglite, type PgliteServer } from '../../db/pglite-server';

describe('embedded Postgres server (db/pglite-server.ts)', () => {
  const password = 'generated-4f9c2a';
  let db: PGlite;
  let server: PgliteServer;
  const clients: pg.Client[] = [];
  const connect = async () => {
    const c = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', password, database: 'postgres' });
    c.on('error', () => undefined); // a test destroys sockets on purpose
    await c.connect();
    clients.push(c);
    return c;
  };

  before(async () => {
    db = await PGlite.create();
    server = await servePglite(db, { host: '127.0.0.1', port: 0, maxConnections: 50, password });
    await db.exec('create table t (id int primary key, who text)');
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.end()));
    await server.stop();
    await db.close();
  });
  beforeEach(() => db.exec('delete from t'));

  it('asks every connection for its password, and refuses a wrong or missing one', async () => {
    for (const wrong of ['postgres', '', undefined]) {
      const c = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', password: wrong });
      c.on('error', () => undefined);
      await assert.rejects(c.connect(), /password authentication failed for user "postgres"|password must be a string/);
      await c.end().catch(() => undefined);
    }
    const right = await connect();
    assert.equal((await right.query('select 1 as one')).rows[0].one, 1);
  });

  it('keeps each connection out of the others’ transactions', async () => {
    const [a, b] = [await connect(), await connect()];
    await a.query('begin');
    await a.query('insert into t values ($1, $2)', [1, 'a']);
    const bInsert = b.query('insert into t values ($1, $2)', [2, 'b']); // waits for a's transaction, not inside it
    await a.query('rollback');
    await bInsert;
    const rows = (await b.query('select id, who from t order by id')).rows;
    assert.deepEqual(rows, [{ id: 2, who: 'b' }]);
  });

  it('answers many concurrent parameterised queries each with its own parameters', async () => {
    const conns = await Promise.all(Array.from({ length: 10 }, connect));
    // Ten connections at once, each sending its queries one after another (pg's extended protocol).
    await Promise.all(
      conns.map(async (c, k) => {
        for (let i = k * 20; i < (k + 1) * 20; i++) {
          const r = await c.query('select $1::int * 2 as v, $2::text as s', [i, `q${i}`]);
          assert.deepEqual(r.rows[0], { v: i * 2, s: `q${i}` });
        }
      }),
    );
  });

  it('rolls back and releases the backend when a connection dies inside a transaction', async () => {
    const [dying, other] = [await connect(), await connect()];
    await dying.query('begin');
    await dying.query('insert into t values (3, $1)', ['dying']);
    (dying as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    await other.query('insert into t values (4, $1)', ['other']);
    const rows = (await other.query('select id from t order by id')).rows;
    assert.deepEqual(rows, [{ id: 4 }]);
  });

  it('answers an exchange whose statement fails with the error, and the connection goes on', async () => {
    const c = await connect();
    await assert.rejects(c.query('select * from no_such_table where id = $1', [1]), /no_such_table/);
    await assert.rejects(c.query('insert into t values ($1, $2)', ['not a number', 'x']), /integer/);
    assert.deepEqual((await c.query('select $1::int + 1 as v', [41])).rows, [{ v: 42 }]);
  });

  it('releases the backend, and keeps nothing, when a connection dies between its Execute and its Sync', async () => {
    const [dying, other] = [await connect(), await connect()];
    // Parse, Bind and Execute with no Sync: the exchange is open, and the backend is this connection's until it
    // ends. Never synced, its insert is not committed, as Postgres rolls back a connection's unfinished exchange.
    const raw = dying as unknown as {
      connection: {
        parse(q: object): void;
        bind(b: object): void;
        execute(e: object): void;
        stream: { destroy(): void };
      };
    };
    raw.connection.parse({ text: 'insert into t values ($1, $2)', types: [] });
    raw.connection.bind({ values: ['5', 'dying'] });
    raw.connection.execute({});
    await new Promise((r) => setTimeout(r, 50));
    raw.connection.stream.destroy();
    await other.query('insert into t values (6, $1)', ['other']);
    assert.deepEqual((await other.query('select id from t order by id')).rows, [{ id: 6 }]);
  });
});
