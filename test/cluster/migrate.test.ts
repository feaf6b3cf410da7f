// Schema migrations when several web processes start at once, on the cluster's PostgreSQL 18 with pgvector
// (scripts/cluster-tools.sh): one migrates while the others wait for it on the migration lock, for as long as it takes
// (on a busy machine a migration outlasts any fixed limit), and a process that dies while migrating releases the lock
// with its connection.
import assert from 'node:assert/strict';
import path from 'node:path';
import type { Knex } from 'knex';
import { createKnex } from '../../db/knex';
import { migrate, migrationLockKey } from '../../db/migrate';
import { waitFor } from '../../scripts/supervisor';
import { startPostgresServer, type DatabaseServer } from '../support/servers';

describe('migrations from several processes at once (real PostgreSQL)', function () {
  this.timeout(180_000);
  let pg: DatabaseServer;
  const opened: Knex[] = [];
  /** A process's own pool on a database of the server, as the superuser (the migrations create extensions). */
  const connect = (database: string) => {
    const knex = createKnex(`postgres://postgres:admin-secret@${pg.host}:${pg.port}/${database}`, { max: 4 });
    opened.push(knex);
    return knex;
  };
  let n = 0;
  const emptyDatabase = async () => {
    const name = `cadre_${++n}`;
    await pg.admin.raw(`create database ${name}`);
    return name;
  };
  const tables = async (knex: Knex) =>
    (await knex.raw(`select tablename from pg_tables where schemaname = 'public'`)).rows.length as number;

  before(async () => {
    pg = await startPostgresServer({ bin: path.resolve(__dirname, '../../.tools/pgserver/pgserver/pginstall/bin') });
  });
  after(async () => {
    await Promise.all(opened.map((k) => k.destroy()));
    await pg?.stop();
  });

  it('migrates an empty database once when two processes start together: the second finds it done', async () => {
    const database = await emptyDatabase();
    const [a, b] = await Promise.all([migrate(connect(database)), migrate(connect(database))]);
    const [all, none] = a.length > 0 ? [a, b] : [b, a];
    assert.ok(all.length > 20, `one process applied every migration: ${all.join(', ')}`);
    assert.deepEqual(none, [], 'the other applied none');
    assert.deepEqual(await migrate(connect(database)), [], 'a later start finds the schema up to date');
  });

  it('waits while another process migrates, and goes on when that process dies with the lock', async () => {
    const database = await emptyDatabase();
    // Another process mid-migration: it holds the lock on its connection.
    const other = connect(database);
    const holder = await other.client.acquireConnection();
    await other.raw('select pg_advisory_lock(?)', [migrationLockKey]).connection(holder);
    const otherPid = (await other.raw('select pg_backend_pid() as pid').connection(holder)).rows[0].pid as number;

    const knex = connect(database);
    let settled = false;
    const migrating = migrate(knex).finally(() => (settled = true));
    // Waiting on the lock, not refused and not migrating beside the other process.
    await waitFor(
      'the second process to wait on the migration lock',
      async () => {
        const { rows } = await pg.admin.raw(
          `select 1 from pg_locks where locktype = 'advisory' and objid = ? and not granted`,
          [migrationLockKey],
        );
        assert.equal(rows.length, 1);
      },
      60_000,
    );
    assert.equal(settled, false);
    assert.equal(await tables(knex), 0, 'nothing migrated under the other process');

    // The other process dies: the server ends its session, and with it the lock.
    await pg.admin.raw('select pg_terminate_backend(?)', [otherPid]);
    await other.client.releaseConnection(holder);
    const applied = await migrating;
    assert.ok(applied.length > 20, `it migrated once the lock was free: ${applied.join(', ')}`);
    assert.ok((await tables(knex)) > 20);
  });
});
