// `npm start`: the whole stack on its embedded defaults — Temporal dev server, and embedded Postgres, worker and
// web in one Node process (scripts/embedded-node.ts) — as supervised children. A child that crashes once the stack
// is up is restarted (scripts/supervisor.ts); Ctrl-C or SIGTERM stops them in reverse order and nothing is left
// running.
//
// This process stays up as long as Cadre does, and glibc keeps what a one-time job took from it, so it imports only
// what supervising needs: the children's specs, a TCP, HTTP or gRPC health probe. Everything else runs in a child
// that exits: reading the configuration (zod), migrations, the demo workspace, the claim link, the checks of an
// external database or Temporal and the embedding model's install in short-lived scripts/prepare.ts steps; the
// server code's build in `node scripts/build.cjs` (scripts/start.cjs), the Temporal CLI's in `go install`, the
// console's in Vite.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { DemoSeed } from '../db/seeds';
import { main, StartupError } from './fail-fast';
import type { PrepareAnswers, PrepareStep } from './prepare';
import { Supervisor, tcpOpen, waitFor, type ChildSpec } from './supervisor';
import { devServerArgs, ensureTemporalCli } from './temporal-cli';
import { temporalServing } from './temporal-health';
import { embeddingModelInstalled } from './embedding-model';
import { nodeScript } from '../node-script';
import { repoRoot as root } from '../repo-root';

// Each child runs as this supervisor does: compiled (dist/, built by scripts/start.cjs) with plain node under
// `npm start`, from the TypeScript sources through tsx under the tests.
const script = (name: string) => nodeScript(require.resolve(`./${name}`));

/** Runs a step of scripts/prepare.ts in its own process and returns its answer; its failure is this start's one line. */
async function prepare<S extends PrepareStep>(step: S): Promise<PrepareAnswers[S]> {
  const [node, args] = script('prepare');
  const child = spawn(node, [...args, step], { cwd: root, env: process.env, stdio: ['ignore', 'pipe', 'inherit'] });
  // A supervisor that exits meanwhile (Ctrl-C, SIGTERM, a child that died) takes it along.
  const stop = () => child.kill();
  process.once('exit', stop);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  process.off('exit', stop);
  const lines = out.trimEnd().split('\n');
  const last = lines.pop() ?? '';
  if (lines.length > 0) console.log(lines.join('\n')); // what a library printed on the way
  let answer: { done?: PrepareAnswers[S]; error?: string } = {};
  try {
    answer = JSON.parse(last) as typeof answer;
  } catch {
    // no answer: it crashed, and what it printed on stderr says why
  }
  if (code !== 0 || answer.error !== undefined)
    throw new StartupError(answer.error ?? `preparing the start (${step}) failed with exit code ${code}`);
  return answer.done!;
}

/**
 * Resolves when the web's GET /readyz answers 2xx, else rejects with its detail. With node:http, not fetch: fetch's
 * HTTP client (undici) would stay loaded in this process, about 7 MB more.
 */
function webReady(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/readyz' }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve();
          let detail: string | undefined;
          try {
            detail = (JSON.parse(body) as { detail?: string }).detail;
          } catch {
            // not JSON: the status says enough
          }
          reject(new Error(`readyz answered ${status}${detail ? `: ${detail}` : ''}`));
        });
      })
      .on('error', reject);
  });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Vite's command-line entry, from its package.json: Vite 8 exports no `vite/bin/vite.js` subpath. */
function viteCli(): string {
  const manifest = require.resolve('vite/package.json');
  const { bin } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { bin: { vite: string } };
  return path.join(path.dirname(manifest), bin.vite);
}

/** Builds the console when its build is missing or older than its sources (a fresh clone, a pull). */
function ensureConsoleBuilt(): void {
  const handler = path.join(root, 'ui/build/handler.js');
  const sources = ['ui/src', 'ui/svelte.config.js', 'ui/vite.config.ts'].map((p) => path.join(root, p));
  const sourceTime = Math.max(
    ...sources.map((p) => (fs.statSync(p).isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs)),
  );
  if (fs.existsSync(handler) && fs.statSync(handler).mtimeMs >= sourceTime) return;
  console.log('building the console (ui/)…');
  const r = spawnSync(process.execPath, [viteCli(), 'build', '--config', 'ui/vite.config.ts', '--logLevel', 'warn'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  // SvelteKit's adapter ends with "Run npm run preview to preview your production build locally.", advice for its
  // own projects that a newcomer here would follow; everything else the build says is kept.
  const said = r.stdout.split('\n').filter((line) => line.trim() !== '' && !/npm run preview/.test(line));
  if (said.length > 0) console.log(said.join('\n'));
  if (r.status !== 0)
    throw new StartupError('building the console failed (see above); "npm run build:ui" shows the same');
}

async function assertPortFree(port: number, variable: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', () =>
      reject(new StartupError(`port ${port} is already in use: stop what uses it or set ${variable} to a free port`)),
    );
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

/** mkdir -p, one level at a time: Node 20's `mkdirSync(dir, { recursive: true })` loops forever when mkdir answers
 * ENOENT under a parent that exists (e.g. CADRE_DATA_DIR=/proc/cadre). */
function mkdirs(dir: string): void {
  if (fs.existsSync(dir)) return;
  mkdirs(path.dirname(dir));
  fs.mkdirSync(dir);
}

function assertWritable(dir: string): void {
  try {
    mkdirs(dir);
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    throw new StartupError(
      `cannot write to the data directory ${dir}: fix its permissions or set CADRE_DATA_DIR to a writable folder`,
    );
  }
}

/**
 * A crashed server is restarted on its data only while that data is still there: starting an empty one in its place
 * would silently forget every agent and run.
 */
function assertDataKept(file: string, what: string): void {
  if (!fs.existsSync(file)) throw new Error(`${what} at ${file} is gone; not starting an empty one in its place`);
}

main('cadre', async () => {
  const config = await prepare('config');
  const tc = config.temporal;
  assertWritable(config.dataDir);
  await assertPortFree(config.web.port, 'CADRE_WEB_PORT');
  if (config.db.embedded) await assertPortFree(config.db.embeddedPort, 'CADRE_DB_PORT');
  if (tc.embedded) {
    await assertPortFree(tc.embeddedPort, 'CADRE_TEMPORAL_PORT');
    await assertPortFree(tc.embeddedUiPort, 'CADRE_TEMPORAL_UI_PORT');
  }
  // An external Postgres is checked (reachable, pgvector, migrated) before anything starts, so a wrong
  // DATABASE_URL fails in one line instead of after a Temporal start and stop; an external Temporal likewise.
  if (!config.db.embedded || !tc.embedded) await prepare('check');

  const supervisor = new Supervisor({
    cwd: root,
    env: process.env,
    readableLogs: config.logFormat === 'readable',
  });
  process.on('SIGINT', () => void supervisor.shutdown(0));
  process.on('SIGTERM', () => void supervisor.shutdown(0));
  const spawnChild = (name: string, command: string, args: string[], more: Partial<ChildSpec> = {}) =>
    supervisor.start({ name, command, args, ...more });

  try {
    if (tc.embedded) {
      const temporalBin = ensureTemporalCli();
      const temporalDb = path.join(config.dataDir, 'temporal.db');
      spawnChild(
        'temporal',
        temporalBin,
        devServerArgs({
          port: tc.embeddedPort,
          uiPort: tc.embeddedUiPort,
          namespace: tc.namespace,
          logLevel: 'warn',
          searchAttributes: tc.searchAttributes,
          dbFile: temporalDb,
        }),
        {
          beforeRestart: () => assertDataKept(temporalDb, 'the Temporal database'),
          background: true,
          // Temporal's ErrShardStatusUnknown (service/history/shard/context_impl.go: "not sure if we have the shard
          // lock", an Unavailable its clients retry), logged at ERROR for each request that reaches a history shard
          // still being acquired at start; none of start-dev's flags holds those requests back. Later it only
          // follows a database timeout, whose own ERROR lines ("context deadline exceeded") still show.
          quiet: /level=ERROR.*shard status unknown/,
          // Stopped, its internal worker and clients lose the server one by one and warn of each ("Failed to poll for
          // task.", "network dial error"): a page of WARN lines after every Ctrl-C. Errors still show.
          quietWhileStopping: /\blevel=WARN\b/,
        },
      );
      await waitFor('Temporal', () => temporalServing(tc.address), 60_000);
    }
    ensureConsoleBuilt(); // before the web starts: it serves the console it finds then
    // Vector retrieval needs the local embedding model unless another provider is chosen; without it sources
    // still work with full-text retrieval.
    // (CADRE_EMBEDDINGS is one of local, voyage or off: the configuration step checked it.)
    if ((process.env.CADRE_EMBEDDINGS || 'local') === 'local' && !embeddingModelInstalled()) {
      await prepare('model').catch((err) =>
        console.warn(`vector retrieval is off: the embedding model could not be installed (${(err as Error).message})`),
      );
    }
    // The embedded Postgres, the worker and the web in one Node process (scripts/embedded-node.ts says why), with
    // V8 flags that it idles 108 MB lower with (npm run bench:footprint; the 10,000-row run and OCR took as long):
    // --liftoff-only compiles PGlite's WebAssembly with the baseline compiler only, as the optimizing compiler's
    // work memory stayed with the process; --max-semi-space-size=2 (MB) keeps each thread's young generation small.
    const [node, appArgs] = script('embedded-node');
    spawnChild('app', node, ['--liftoff-only', '--max-semi-space-size=2', ...appArgs], {
      // glibc's malloc, told to keep less: two arenas, not one per thread (of 17), and blocks of 256 kB or more (a
      // page's pictures, the embedding model's tensors) in maps of their own given back when freed, where glibc's
      // moving threshold kept them in its arenas: the indexing of 20 scanned PDFs peaked 130–150 MB lower
      // (npm run bench:footprint -- --run). A value set by the user wins.
      env: {
        MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
        MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? '262144',
      },
      // Postgres replays its write-ahead log on the next start, so a killed PGlite comes back whole.
      beforeRestart: () => {
        if (config.db.embedded) assertDataKept(path.join(config.db.embeddedDir, 'PG_VERSION'), 'the embedded database');
      },
    });
    // The demo workspace and the claim link as soon as the database runs, while the web and the worker come up: the
    // banner waits for both.
    const prepared = (async () => {
      if (config.db.embedded) await waitFor('the embedded Postgres', () => tcpOpen(config.db.embeddedPort), 60_000);
      return prepare('seed');
    })();
    // Ready means a worker polls the task queue too (api/readiness.ts): a run started after the banner runs at once.
    const ready = waitFor('the web process and the worker', () => webReady(config.web.port), 300_000);
    const [{ seed, claim }] = await Promise.all([prepared, ready]);

    printBanner(config.web.publicUrl, tc.embedded ? tc.uiUrl : undefined, seed, claim);
    supervisor.healing = true;
  } catch (err) {
    // Stop what started, then rethrow so main() prints the one line that says what to fix (shutdown() would
    // exit before it). A shutdown already under way (a signal, a child that died) exits on its own.
    if (supervisor.stopping) return new Promise<never>(() => undefined);
    await supervisor.stopAll().catch(() => undefined);
    throw err;
  }
});

function printBanner(
  url: string,
  temporalUi: string | undefined,
  seed: DemoSeed | undefined,
  claim: string | undefined,
) {
  const lines = ['', `  Cadre is running.`, `  Console:      ${url}`];
  if (claim) lines.push('', `  Create the owner account of the demo workspace (one-time link):`, `    ${claim}`);
  if (temporalUi) lines.push(`  Temporal UI:  ${temporalUi}`);
  if (seed) {
    const agent = seed.agents.find((a) => a.name === 'Route invoice rows') ?? seed.agents[0];
    lines.push(
      '',
      `  First start: a demo workspace (${seed.workspaceId}) with ${seed.agents.length} example agents.`,
      `  Its API key (shown once, keep it):`,
      `    ${seed.apiKey}`,
      '',
      `  Start a run of "${agent.name}":`,
      `    curl -sS -X POST ${url}/v1/agents/${agent.id}/run \\`,
      `      -H "Authorization: Bearer ${seed.apiKey}" -H "Content-Type: application/json" \\`,
      `      -d '{"input": "invoice,vendor,amount\\nINV-1,Acme,120.50\\nINV-2,Globex,18250\\nINV-3,Initech,990"}'`,
    );
  } else {
    lines.push('', '  API keys: npx cadre apikey create --workspace <id> --scopes run,read');
  }
  lines.push('', '  Stop with Ctrl-C.', '');
  console.log(lines.join('\n'));
}
