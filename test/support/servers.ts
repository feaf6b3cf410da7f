// Real database servers for the tests, started in a throwaway directory on free ports and stopped after: Debian's
// PostgreSQL and MariaDB (scripts/prepare-test.sh installs them), as a connected business database would be.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { freePort } from './ports';

export interface DatabaseServer {
  host: string;
  port: number;
  /** A database `shop` and a user `app` with this password, which owns it. */
  database: string;
  user: string;
  password: string;
  /** An administrator's connection, to set up tables and check what a run wrote. */
  admin: knexFactory.Knex;
  stop(): Promise<void>;
}

export const appPassword = 'app-secret-9f3c1d';

export function run(
  command: string,
  args: string[],
  opts: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {},
) {
  const r = spawnSync(command, args, { encoding: 'utf8', ...opts, env: { ...process.env, ...opts.env } });
  if (r.status !== 0) throw new Error(`${path.basename(command)} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Postgres will not run as root: as root, run it as the `postgres` user Debian's package makes (else `nobody`). */
export function pgUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const user = spawnSync('id', ['-u', 'postgres']).status === 0 ? 'postgres' : 'nobody';
  return { uid: Number(run('id', ['-u', user]).trim()), gid: Number(run('id', ['-g', user]).trim()) };
}

/** Debian's newest PostgreSQL server (scripts/prepare-test.sh installs postgresql-15 when it is missing). */
export function debianPgBin(): string {
  const base = '/usr/lib/postgresql';
  const major = fs.existsSync(base)
    ? fs
        .readdirSync(base)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))[0]
    : undefined;
  if (!major) throw new Error("Debian's PostgreSQL is not installed: apt-get install postgresql-15");
  return path.join(base, major, 'bin');
}

function stopper(child: ChildProcess, dir: string) {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
      child.kill('SIGKILL');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
}

/** Debian's PostgreSQL (or the server whose binaries are in `bin`) with password authentication (scram-sha-256). */
export async function startPostgresServer(opts: { bin?: string } = {}): Promise<DatabaseServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-pg-'));
  fs.chmodSync(dir, 0o755);
  const owner = pgUser();
  const data = path.join(dir, 'data');
  const pwfile = path.join(dir, 'pw');
  fs.mkdirSync(data);
  fs.writeFileSync(pwfile, 'admin-secret\n');
  if (owner.uid !== undefined) {
    fs.chownSync(data, owner.uid, owner.gid!);
    fs.chownSync(pwfile, owner.uid, owner.gid!);
  }
  const bin = opts.bin ?? debianPgBin();
  run(
    path.join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`, '--no-sync'],
    { ...owner, env: { LC_ALL: 'C' } },
  );
  const port = await freePort();
  const child = spawn(
    path.join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', data, '-c', 'listen_addresses=127.0.0.1'],
    { stdio: 'ignore', uid: owner.uid, gid: owner.gid },
  );
  await waitFor('PostgreSQL', () => tcpOpen(port), 60_000);
  const connect = (user: string, password: string, database: string) =>
    knexFactory({ client: 'pg', connection: { host: '127.0.0.1', port, user, password, database }, pool: { max: 2 } });
  const root = connect('postgres', 'admin-secret', 'postgres');
  await waitFor('PostgreSQL to accept queries', () => root.raw('select 1'), 30_000);
  await root.raw(`create role app login password '${appPassword}'`);
  await root.raw('create database shop owner app');
  await root.destroy();
  const admin = connect('postgres', 'admin-secret', 'shop');
  const stop = stopper(child, dir);
  return {
    host: '127.0.0.1',
    port,
    database: 'shop',
    user: 'app',
    password: appPassword,
    admin,
    stop: async () => {
      await admin.destroy();
      await stop();
    },
  };
}

/** Debian's MariaDB, its data in a temp directory, with a password user `app`. */
export async function startMariaDb(): Promise<DatabaseServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-mariadb-'));
  fs.chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  // As root the server runs as Debian's `mysql` user, which must own its files.
  const user = asRoot ? ['--user=mysql'] : [];
  fs.mkdirSync(data);
  if (asRoot) run('chown', ['-R', 'mysql:mysql', dir]);
  run('mariadb-install-db', [
    `--datadir=${data}`,
    ...user,
    '--auth-root-authentication-method=normal',
    '--skip-test-db',
    '--skip-name-resolve',
  ]);
  const port = await freePort();
  const child = spawn(
    'mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${path.join(dir, 'mysqld.sock')}`,
      `--pid-file=${path.join(dir, 'mysqld.pid')}`,
      '--bind-address=127.0.0.1',
      `--port=${port}`,
      '--skip-name-resolve',
      '--innodb-flush-log-at-trx-commit=2',
      ...user,
    ],
    { stdio: 'ignore' },
  );
  await waitFor('MariaDB', () => tcpOpen(port), 60_000);
  const connect = (u: string, password: string, database?: string) =>
    knexFactory({
      client: 'mysql2',
      connection: { host: '127.0.0.1', port, user: u, password, database },
      pool: { max: 2 },
    });
  const root = connect('root', '');
  await waitFor('MariaDB to accept queries', () => root.raw('select 1'), 30_000);
  await root.raw('create database shop');
  await root.raw(`create user 'app'@'%' identified by '${appPassword}'`);
  await root.raw(`grant all on shop.* to 'app'@'%'`);
  await root.destroy();
  const admin = connect('root', '', 'shop');
  const stop = stopper(child, dir);
  return {
    host: '127.0.0.1',
    port,
    database: 'shop',
    user: 'app',
    password: appPassword,
    admin,
    stop: async () => {
      await admin.destroy();
      await stop();
    },
  };
}
