// Finds the Temporal CLI (its dev server is Cadre's embedded Temporal), building it once with Go if needed.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../repo-root';
import { StartupError } from './fail-fast';

export const temporalCliVersion = 'v1.5.1'; // newest release whose go.mod allows `go install pkg@version`
/**
 * Dynamic config of the embedded dev server. Eager activity dispatch: an activity a workflow task schedules on its
 * own task queue comes back to that worker in the task's completion, instead of through a separate matching
 * round trip (the bench measured 48 ms from schedule to start without it, under 15 ms with it, for every item
 * of a model step). A cluster of your own needs `system.enableActivityEagerExecution: true` for the same.
 */
export const devServerDynamicConfig = [
  '--dynamic-config-value',
  'system.enableActivityEagerExecution=true',
  // Runs carry their agent as fairness key (model/run-identity.ts); a cluster of your own needs this too.
  '--dynamic-config-value',
  'matching.enableFairness=true',
];
const localBinary = path.join(repoRoot, '.tools', 'bin', 'temporal');

/**
 * SQLite settings of the dev server's file. SQLite's defaults (a rollback journal, a sync per commit) halved the
 * throughput of one-item runs (bench:runs, 300 runs: 7.0 runs/s against 14.6 with these; raw Temporal 23.6
 * against 33.1). In WAL mode with synchronous=normal a commit survives the process being killed, which is what the
 * supervisor recovers from; only a power cut can lose the last commits, as it can PGlite's.
 */
const sqlitePragmas = ['journal_mode=wal', 'synchronous=normal'];

/** The arguments of `temporal server start-dev` as `npm start` runs it (and the tests, with no file: in memory). */
export function devServerArgs(o: {
  port: number;
  uiPort: number;
  namespace: string;
  logLevel: 'warn' | 'error';
  searchAttributes: Record<string, string>;
  /** The SQLite file that keeps workflows across restarts; unset, they live in memory only. */
  dbFile?: string;
  headless?: boolean;
}): string[] {
  return [
    'server',
    'start-dev',
    ...(o.headless ? ['--headless'] : []),
    ...(o.dbFile ? ['--db-filename', o.dbFile, ...sqlitePragmas.flatMap((p) => ['--sqlite-pragma', p])] : []),
    '--ip',
    '127.0.0.1',
    '--port',
    String(o.port),
    '--ui-port',
    String(o.uiPort),
    '--namespace',
    o.namespace,
    '--log-level',
    o.logLevel,
    ...Object.entries(o.searchAttributes).flatMap(([k, t]) => ['--search-attribute', `${k}=${t}`]),
    ...devServerDynamicConfig,
  ];
}

function onPath(cmd: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export function findTemporalCli(): string | undefined {
  if (fs.existsSync(localBinary)) return localBinary;
  return onPath('temporal');
}

export function ensureTemporalCli(log: (line: string) => void = console.log): string {
  const found = findTemporalCli();
  if (found) return found;
  const go = onPath('go') ?? (fs.existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new StartupError(
      `the Temporal CLI is needed: install Go (https://go.dev/dl, or "apt-get install golang") so Cadre can build it, or put a "temporal" binary on PATH`,
    );
  }
  log(`building the Temporal CLI ${temporalCliVersion} with Go into .tools/bin (once; takes a few minutes)…`);
  try {
    execFileSync(go, ['install', `github.com/temporalio/cli/cmd/temporal@${temporalCliVersion}`], {
      env: { ...process.env, GOBIN: path.dirname(localBinary), GOFLAGS: '-mod=mod' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  } catch {
    throw new StartupError(
      `building the Temporal CLI with "${go} install" failed (see above); install "temporal" on PATH instead`,
    );
  }
  return localBinary;
}

if (require.main === module) {
  try {
    console.log(ensureTemporalCli());
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}
