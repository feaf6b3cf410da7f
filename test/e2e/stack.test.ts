// `npm start` end to end, as a newcomer meets it: in a fresh checkout of the repository (no ui/build, no data,
// nothing prebuilt but node_modules and the Temporal CLI), on free ports and a throwaway CADRE_DATA_DIR, so it
// never meets a stack someone runs on the defaults (3000/5433/7233/8233) or another `npm test`. Checks the banner
// and its ready-to-paste curl, a demo run to its end, SIGTERM to npm, Ctrl-C and SIGTERM to the supervisor (nothing
// left running), a second start on the same data, that a SIGKILLed child is restarted while a 20,000-item run
// completes with every item done once, and that bad configuration fails fast with one line that says what to fix.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { freePorts } from '../support/ports';

const repoRoot = path.resolve(__dirname, '../..');
const apiKeyPattern = /\bcadre_[A-Za-z0-9]+_[A-Za-z0-9_-]{16,}/;
const exampleCount = fs.readdirSync(path.join(repoRoot, 'examples')).filter((f) => f.endsWith('.json')).length;

interface Ports {
  web: number;
  db: number;
  temporal: number;
  temporalUi: number;
}

interface Launched {
  child: ChildProcess;
  pid: number;
  startedAt: number;
  output: () => string;
  /** Resolves once the process has exited and its output is read. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  hasExited: () => boolean;
}

const launched: Launched[] = [];
const tempDirs: string[] = [];
/** Process groups the stacks made (the supervisor's and each child's), for the leftover check and the cleanup. */
const knownGroups = new Set<number>();
const cleanups: (() => Promise<void> | void)[] = [];

async function stackPorts(): Promise<Ports> {
  const [web, db, temporal, temporalUi] = await freePorts(4);
  return { web, db, temporal, temporalUi };
}

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** The environment of one stack: only what the test chooses, nothing inherited that points elsewhere. */
function stackEnv(dataDir: string, ports: Ports, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CADRE_DATA_DIR: dataDir,
    CADRE_WEB_PORT: String(ports.web),
    CADRE_DB_PORT: String(ports.db),
    CADRE_TEMPORAL_PORT: String(ports.temporal),
    CADRE_TEMPORAL_UI_PORT: String(ports.temporalUi),
    CADRE_PUBLIC_URL: '',
    CADRE_DEBUG: '',
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    TEMPORAL_UI_URL: '',
    ANTHROPIC_API_KEY: '',
    FORCE_COLOR: '0',
    ...extra,
  };
}

/**
 * A fresh checkout of this tree: the files a clone would have (tracked, plus new files git does not ignore, so a
 * developer's uncommitted work is what gets tested; in CI the two are the same). Nothing git ignores comes along:
 * no ui/build, no data/. Only what `npm install` and the Temporal CLI build make is borrowed from this checkout.
 */
function freshCheckout(): string {
  const dir = path.join(tempDir('cadre-stack-checkout-'), 'cadre');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repoRoot,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
    .split('\0')
    .filter((f) => f !== '' && fs.existsSync(path.join(repoRoot, f))); // a deleted file not yet committed
  for (const f of files) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(path.join(repoRoot, f), path.join(dir, f));
  }
  // The installed packages, the Temporal CLI and the embedding model (registry downloads `npm start` would
  // otherwise make first: minutes that prove nothing about the start itself).
  for (const installed of ['node_modules', '.tools', '.models']) {
    if (fs.existsSync(path.join(repoRoot, installed)))
      fs.symlinkSync(path.join(repoRoot, installed), path.join(dir, installed));
  }
  assert.equal(fs.existsSync(path.join(dir, 'ui/build')), false);
  return dir;
}

/** `npm start` as a person types it, in its own process group, stdout and stderr collected together. */
function launchNpm(cwd: string, env: NodeJS.ProcessEnv): Launched {
  return launch(env, cwd, 'npm', ['start']);
}

/** `node scripts/start.cjs` (what `npm start` runs: the supervisor itself, compiled) in its own process group. */
function launch(
  env: NodeJS.ProcessEnv,
  cwd = repoRoot,
  command = process.execPath,
  args = ['scripts/start.cjs'],
): Launched {
  const child = spawn(command, args, {
    cwd,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.ok(child.pid, 'the supervisor did not start');
  knownGroups.add(child.pid);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      // Let the pipes drain; a grandchild holding them must not keep the test waiting.
      const drained = new Promise<void>((r) => child.once('close', () => r()));
      void Promise.race([drained, sleep(5000)]).then(() => resolve({ code, signal }));
    });
  });
  const l: Launched = {
    child,
    pid: child.pid,
    startedAt: Date.now(),
    output: () => out,
    exited,
    hasExited: () => done,
  };
  launched.push(l);
  return l;
}

/** The command line of one of Cadre's processes as the supervisor starts it: the compiled script, plain node. */
function compiledScript(name: string): RegExp {
  return new RegExp(`^\\S*node (--\\S+ )*\\S*/dist/scripts/${name}\\.js$`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function tail(text: string, lines = 60): string {
  return text.split('\n').slice(-lines).join('\n');
}

/** Waits until the output satisfies `done`; fails with the output's tail if the process exits first or time runs out. */
async function waitForOutput(l: Launched, done: (out: string) => boolean, what: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!done(l.output())) {
    if (l.hasExited()) {
      const { code, signal } = await l.exited;
      assert.fail(`the supervisor exited (code ${code}, signal ${signal}) before ${what}:\n${tail(l.output())}`);
    }
    if (Date.now() > deadline) assert.fail(`no ${what} within ${timeoutMs / 1000} s:\n${tail(l.output())}`);
    await sleep(200);
  }
}

async function waitForExit(l: Launched, timeoutMs: number) {
  const timer = sleep(timeoutMs).then(() => 'timeout' as const);
  const r = await Promise.race([l.exited, timer]);
  if (r === 'timeout') {
    killGroup(l.pid);
    assert.fail(`the supervisor did not exit within ${timeoutMs / 1000} s:\n${tail(l.output())}`);
  }
  return r;
}

function killGroup(pgid: number, signal: NodeJS.Signals = 'SIGKILL') {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

interface PsRow {
  pid: number;
  pgid: number;
  stat: string;
  args: string;
}

function ps(extra: string[] = ['-e']): PsRow[] {
  const r = spawnSync('ps', [...extra, '-o', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' });
  return r.stdout
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), pgid: Number(m[2]), stat: m[3], args: m[4] }));
}

/** The supervisor's pid: the launched process itself, or the child `npm start` runs it as. */
function supervisorPid(l: Launched): number {
  const supervisor = [{ pid: l.pid, args: l.child.spawnargs.join(' ') }, ...ps(['--ppid', String(l.pid)])].find((p) =>
    p.args.includes('scripts/start.cjs'),
  );
  assert.ok(supervisor, `no supervisor (scripts/start.cjs) under ${l.pid}`);
  return supervisor.pid;
}

/** The supervisor's direct children (temporal and app), recorded by process group. */
function recordChildren(supervisorPid: number): PsRow[] {
  const children = ps(['--ppid', String(supervisorPid)]);
  for (const c of children) knownGroups.add(c.pgid);
  return children;
}

/** Running processes that belong to a stack: in one of its process groups, or naming its data dir or a port. */
function leftovers(groups: Set<number>, dataDir: string, ports: number[]): PsRow[] {
  const portRe = new RegExp(`(^|[^0-9])(${ports.join('|')})([^0-9]|$)`);
  return ps().filter(
    (p) =>
      p.pid !== process.pid &&
      !p.stat.startsWith('Z') && // an exited child not yet reaped is not running
      (groups.has(p.pgid) || p.args.includes(dataDir) || portRe.test(p.args)),
  );
}

async function assertNothingLeft(groups: Set<number>, dataDir: string, ports: Ports) {
  const portList = [ports.web, ports.db, ports.temporal, ports.temporalUi];
  // Processes killed a moment ago may still be on their way out: give them a little while, then judge.
  let left = leftovers(groups, dataDir, portList);
  for (let i = 0; i < 50 && left.length > 0; i++) {
    await sleep(200);
    left = leftovers(groups, dataDir, portList);
  }
  assert.deepEqual(
    left.map((p) => `${p.pid} (group ${p.pgid}) ${p.args}`),
    [],
    'processes of the stopped stack are still running',
  );
}

interface RunJson {
  id: string;
  agent_id: string;
  agent_name: string;
  status: string;
  counts: Record<string, number>;
  error: string | null;
}
interface ItemJson {
  seq: number;
  status: string;
  data: unknown;
}
interface AgentJson {
  id: string;
  name: string;
  last_run: RunJson | null;
}
interface List<T> {
  data: T[];
}

/** GET with the bearer key; the body as JSON (typed as the caller expects; the assertions check it). */
async function api<T>(baseUrl: string, key: string, pathname: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${baseUrl}${pathname}`, { headers: { Authorization: `Bearer ${key}` } });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body: body as T };
}

/** Polls a run until it is no longer running; with `tolerateOutage`, refused connections and 5xx (a process
 * being restarted) are waited out. */
async function pollRunEnd(baseUrl: string, key: string, runId: string, opts: { tolerateOutage?: boolean } = {}) {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const answer = await api<RunJson>(baseUrl, key, `/v1/runs/${runId}`).catch((err: Error) => {
      if (!opts.tolerateOutage) throw err;
      return { status: 0, body: err.message as unknown as RunJson };
    });
    const { status, body } = answer;
    if (opts.tolerateOutage && (status === 0 || status >= 500)) {
      if (Date.now() > deadline) assert.fail(`run ${runId}: the API did not come back within 180 s`);
      await sleep(500);
      continue;
    }
    assert.equal(status, 200, `GET /v1/runs/${runId}: ${JSON.stringify(body)}`);
    if (body.status !== 'running') return body;
    if (Date.now() > deadline) assert.fail(`run ${runId} still running after 180 s: ${JSON.stringify(body)}`);
    await sleep(500);
  }
}

async function stateValue(baseUrl: string, key: string, url: string): Promise<number> {
  const { status, body } = await api<{ value: unknown }>(baseUrl, key, url);
  if (status === 404) return 0;
  assert.equal(status, 200, JSON.stringify(body));
  return Number(body.value);
}

function countMatches(text: string, re: RegExp): number {
  return [...text.matchAll(re)].length;
}

function commandExists(cmd: string): boolean {
  return spawnSync('bash', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

function banner(out: string): string {
  const start = out.indexOf('Cadre is running.');
  const end = out.indexOf('Stop with Ctrl-C.', start);
  return start < 0 || end < 0 ? '' : out.slice(start, end + 'Stop with Ctrl-C.'.length);
}

/** Every process the suite spawned is gone afterwards, even when a test failed; then the temp dirs are removed. */
async function cleanUp(this: Mocha.Context) {
  this.timeout(120_000);
  // Every supervisor still running: SIGTERM (it stops its children), then SIGKILL to its group.
  for (const l of launched) if (!l.hasExited()) killGroup(l.pid, 'SIGTERM');
  await Promise.race([Promise.all(launched.map((l) => l.exited)), sleep(30_000)]);
  for (const l of launched) if (!l.hasExited()) killGroup(l.pid);
  // Any child group left behind — only groups still made of this stack's processes (pids get reused).
  const ours = /scripts\/(start|db|worker|web|embedded-node)\.[jt]s|\.tools\/bin\/temporal|esbuild|cadre-stack-/;
  for (const p of ps()) if (knownGroups.has(p.pgid) && ours.test(p.args)) killGroup(p.pgid);
  for (const c of cleanups.reverse()) await c();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
}

describe('npm start (scripts/start.cjs, compiled): the whole stack on its embedded defaults', function () {
  this.timeout(600_000);
  after(cleanUp);

  describe('a fresh checkout: npm start, SIGTERM, a second start on the same data, crashes healed', function () {
    let checkout: string;
    let dataDir: string;
    let ports: Ports;
    let baseUrl: string;
    let first: { apiKey: string; runId: string; agentId: string } | undefined;
    let stoppedCleanly = false;
    const timings: Record<string, number> = {};

    before(async function () {
      checkout = freshCheckout();
      dataDir = tempDir('cadre-stack-test-');
      ports = await stackPorts();
      baseUrl = `http://127.0.0.1:${ports.web}`;
    });

    after(function () {
      if (Object.keys(timings).length > 0) {
        console.log(
          `      (information) cold start to banner ${(timings.cold / 1000).toFixed(1)} s` +
            (timings.restart ? `, restart to banner ${(timings.restart / 1000).toFixed(1)} s` : ''),
        );
      }
    });

    it('`npm start` in a fresh checkout builds the console, prints a banner, and its curl starts the demo run as printed', async function () {
      const stack = launchNpm(checkout, stackEnv(dataDir, ports));
      await waitForOutput(stack, (o) => banner(o) !== '', 'banner', 420_000);
      timings.cold = Date.now() - stack.startedAt;
      const out = stack.output();
      const text = banner(out);
      assert.ok(fs.existsSync(path.join(checkout, 'ui/build/handler.js')), 'npm start builds the console');
      assert.match(out, /^building the server code \(dist\/: dist\/ is missing\)/m);
      assert.ok(fs.existsSync(path.join(checkout, 'dist/scripts/start.js')), 'npm start compiles the server code');
      const signIn = await fetch(`${baseUrl}/login`);
      assert.equal(signIn.status, 200, 'the console serves its sign-in page');
      assert.match(await signIn.text(), /<html/i);

      // The supervisor's two children, each in its own process group: Temporal, and one Node process with the
      // embedded Postgres, the worker and the web (scripts/embedded-node.ts), compiled and run with plain node as the
      // supervisor is (no TypeScript loader in memory).
      const supervisor = supervisorPid(stack);
      // Plain node with package.json's V8 flags (interpreter only), no loader (--import, --require) before the script.
      assert.match(ps(['-p', String(supervisor)])[0]?.args ?? '', /^\S*node( --no-[a-z-]+)* scripts\/start\.cjs$/);
      const children = recordChildren(supervisor);
      for (const name of [/\btemporal server start-dev\b/, compiledScript('embedded-node')]) {
        const c = children.find((p) => name.test(p.args));
        assert.ok(c, `no child matching ${name} under the supervisor: ${JSON.stringify(children)}`);
        assert.equal(c.pgid, c.pid, `${c.args} should lead its own process group`);
      }
      for (const c of children) assert.doesNotMatch(c.args, /tsx/, `${c.args} runs a TypeScript loader`);
      assert.ok(
        children.some((c) => c.args.includes(path.join(dataDir, 'temporal.db'))),
        'temporal keeps its db under CADRE_DATA_DIR',
      );

      assert.match(text, new RegExp(`Console: +http://localhost:${ports.web}\\b`));
      assert.match(text, new RegExp(`Temporal UI: +http://localhost:${ports.temporalUi}\\b`));
      assert.match(
        text,
        new RegExp(`First start: a demo workspace \\([0-9a-f-]{36}\\) with ${exampleCount} example agents`),
      );
      // The one-time link that creates the owner account opens an owner invitation of the demo workspace.
      const claim = new RegExp(`http://localhost:${ports.web}/invite/([A-Za-z0-9_-]{43})`).exec(text);
      assert.ok(claim, `no owner link in the banner:\n${text}`);
      const invitation = await fetch(`${baseUrl}/v1/public/invitations/${claim[1]}`);
      assert.equal(invitation.status, 200);
      assert.deepEqual(
        { ...((await invitation.json()) as object), expires_at: undefined },
        { workspace_name: 'Demo workspace', role: 'owner', email: null, expires_at: undefined },
      );

      // /healthz names the versions it reached.
      const health = await fetch(`${baseUrl}/healthz`);
      assert.equal(health.status, 200);
      const h = (await health.json()) as { temporal: { server_version: string }; postgres: { version: string } };
      assert.match(h.temporal.server_version, /^\d+\.\d+\.\d+/, JSON.stringify(h));
      assert.match(h.postgres.version, /^\d+(\.\d+)?/, JSON.stringify(h));
      const printedServer = /\[temporal\].*\(Server (\d+\.\d+\.\d+)/.exec(out);
      if (printedServer) assert.equal(h.temporal.server_version, printedServer[1]);

      // The key, and the curl exactly as printed.
      const apiKey = apiKeyPattern.exec(text)?.[0];
      assert.ok(apiKey, `no API key in the banner:\n${text}`);
      const curlLines = text.split('\n');
      const from = curlLines.findIndex((l) => /^\s+curl /.test(l));
      const to = curlLines.findIndex((l, i) => i >= from && /^\s+-d '/.test(l));
      assert.ok(from >= 0 && to > from, `no ready-to-paste curl in the banner:\n${text}`);
      const curl = curlLines.slice(from, to + 1).join('\n');
      const url = /-X POST (\S+)/.exec(curl)?.[1];
      assert.ok(url);
      const m = new RegExp(`^http://localhost:${ports.web}/v1/agents/([0-9a-f-]{36})/run$`).exec(url);
      assert.ok(m, `unexpected run URL ${url}`);
      const agentId = m[1];
      assert.ok(curl.includes(`Authorization: Bearer ${apiKey}`), curl);
      const input = JSON.parse(/-d '(.*)'\s*$/m.exec(curl)![1]).input as string;
      assert.equal(input.split('\n').length, 4, `the demo input is a header and 3 rows: ${JSON.stringify(input)}`);

      let status: number;
      let run: RunJson;
      if (commandExists('curl')) {
        // As a person pastes it; -w only appends the status code after the body.
        const r = spawnSync('bash', ['-c', `${curl} -w '\\n%{http_code}'`], { encoding: 'utf8', timeout: 60_000 });
        assert.equal(r.status, 0, `the printed curl failed: ${r.stderr}`);
        const lines = r.stdout.trimEnd().split('\n');
        status = Number(lines.pop());
        run = JSON.parse(lines.join('\n')) as RunJson;
      } else {
        const res = await fetch(url, {
          method: 'POST',
          headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ input }),
        });
        status = res.status;
        run = (await res.json()) as RunJson;
      }
      assert.equal(status, 202, JSON.stringify(run));
      assert.match(run.id, /^[0-9a-f-]{36}$/);
      assert.equal(run.agent_id, agentId);
      assert.equal(run.agent_name, 'Route invoice rows');

      const ended = await pollRunEnd(baseUrl, apiKey, run.id);
      assert.equal(ended.status, 'needs_review', JSON.stringify(ended));
      assert.equal(ended.counts.total, 3, JSON.stringify(ended.counts));
      assert.equal(ended.counts.needs_review, 1, JSON.stringify(ended.counts));
      assert.equal(ended.counts.failed, 0, JSON.stringify(ended.counts));
      assert.equal(ended.error, null);
      const items = await api<List<ItemJson>>(baseUrl, apiKey, `/v1/runs/${run.id}/items`);
      assert.equal(items.status, 200);
      assert.equal(items.body.data.length, 3);
      const flagged = items.body.data.filter((i) => i.status === 'needs_review');
      assert.equal(flagged.length, 1, JSON.stringify(items.body.data));
      assert.ok(JSON.stringify(flagged[0].data).includes('INV-2'), 'the large invoice is the flagged one');

      // What the terminal shows a person: the run's request as one short line, no JSON log object, and no advice
      // from the console's build that does not apply here ("Run npm run preview …").
      const runRequest = new RegExp(`^\\[app\\] POST /v1/agents/${agentId}/run → 202 in \\d+ ms$`, 'm');
      await waitForOutput(stack, (o) => runRequest.test(o), 'the run request in the log', 30_000);
      assert.doesNotMatch(stack.output(), /^\[app\] \{/m, 'a JSON log line in the terminal');
      assert.doesNotMatch(stack.output(), /npm run preview/);

      first = { apiKey, runId: run.id, agentId };
    });

    it('stops on SIGTERM to the npm process (what `kill`, process managers and `docker stop` send) and leaves nothing running', async function () {
      const stack = launched.at(-1);
      assert.ok(stack && !stack.hasExited(), 'the stack of the first test is not running');
      recordChildren(supervisorPid(stack)); // the worker and web may have forked since
      const groups = new Set(knownGroups);
      process.kill(stack.pid, 'SIGTERM'); // npm only: npm hands it to the supervisor
      const { signal } = await waitForExit(stack, 120_000);
      assert.equal(signal, null, tail(stack.output()));
      assert.match(stack.output(), /stopping Cadre/);
      await assertNothingLeft(groups, dataDir, ports);
      for (const p of [ports.web, ports.db, ports.temporal, ports.temporalUi]) {
        await assert.rejects(tcpOpen(p), `port ${p} is still open`);
      }
      stoppedCleanly = true;
    });

    it('starts again on the same data (rebuilding the server code after a source changed): no new key, the key, the run and the example agents are still there', async function () {
      assert.ok(first && stoppedCleanly, 'needs the first start and its clean stop');
      // A source edited (or pulled) since the last start: its compiled module is rebuilt before anything runs.
      const edited = new Date(Date.now() + 1000);
      fs.utimesSync(path.join(checkout, 'scripts/web.ts'), edited, edited);
      const stack = launchNpm(checkout, stackEnv(dataDir, ports));
      await waitForOutput(stack, (o) => banner(o) !== '', 'banner', 300_000);
      timings.restart = Date.now() - stack.startedAt;
      recordChildren(supervisorPid(stack));
      const out = stack.output();
      assert.match(out, /^building the server code \(dist\/: scripts\/web\.ts changed\)/m);
      assert.ok(fs.statSync(path.join(checkout, 'dist/scripts/web.js')).mtimeMs >= edited.getTime() - 1000);
      assert.doesNotMatch(out, /building the console/, 'the console was built by the first start and is current');
      assert.doesNotMatch(out, apiKeyPattern, 'a second start must not print a new API key');
      assert.doesNotMatch(out, /First start/);
      assert.match(banner(out), /API keys: npx cadre apikey create/);

      const run = await api<RunJson>(baseUrl, first.apiKey, `/v1/runs/${first.runId}`);
      assert.equal(run.status, 200, JSON.stringify(run.body));
      assert.equal(run.body.id, first.runId);
      assert.equal(run.body.counts.total, 3);

      const agents = await api<List<AgentJson>>(baseUrl, first.apiKey, '/v1/agents');
      assert.equal(agents.status, 200, JSON.stringify(agents.body));
      assert.equal(agents.body.data.length, exampleCount, JSON.stringify(agents.body.data.map((a) => a.name)));
      const route = agents.body.data.find((a) => a.name === 'Route invoice rows');
      assert.ok(route);
      assert.equal(route.id, first.agentId);
      assert.equal(route.last_run?.id, first.runId);
    });

    // Each child SIGKILLed once, each during its own 20,000-item run of the order-counting example: the supervisor
    // restarts it (the other stays up), the run completes, and the state-store counter rises by exactly 20,000
    // (every item's increment applied once, none lost, none twice). Killing `app` kills the database, the worker
    // and the web at once.
    for (const [name, pattern] of [
      ['app', compiledScript('embedded-node')],
      ['temporal', /\btemporal server start-dev\b/],
    ] as const) {
      it(`restarts the ${name} after SIGKILL during a 20,000-item run, which completes with every item done once`, async function () {
        assert.ok(first, 'needs the first start');
        const stack = launched.at(-1);
        assert.ok(stack && !stack.hasExited(), 'the second start is not running');
        const supervisor = supervisorPid(stack);
        const agents = await api<List<AgentJson>>(baseUrl, first.apiKey, '/v1/agents');
        const counter = agents.body.data.find((a) => a.name === 'Count orders and write an XLSX report');
        assert.ok(counter, 'the order-counting example agent');
        const stateUrl = `/v1/agents/${counter.id}/state-store/orders_seen`;
        const countBefore = await stateValue(baseUrl, first.apiKey, stateUrl);

        const rows = Array.from({ length: 20_000 }, (_, i) => `O-${i},${(i % 7) + 1}`);
        const started = await fetch(`${baseUrl}/v1/agents/${counter.id}/run`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${first.apiKey}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ input: ['order,quantity', ...rows].join('\n') }),
        });
        const run = (await started.json()) as RunJson;
        assert.equal(started.status, 202, JSON.stringify(run));
        // Kill once the run has read its items and is working through them.
        let atKill: RunJson;
        for (;;) {
          atKill = (await api<RunJson>(baseUrl, first.apiKey, `/v1/runs/${run.id}`)).body;
          if (atKill.counts.total > 0 || atKill.status !== 'running') break;
          await sleep(20);
        }
        assert.equal(atKill.status, 'running', `the run ended before the kill: ${JSON.stringify(atKill)}`);
        const victim = recordChildren(supervisor).find((c) => pattern.test(c.args));
        assert.ok(victim, `no ${name} child under the supervisor`);
        const restartsBefore = countMatches(stack.output(), new RegExp(`^${name} restarted \\(pid \\d+\\)$`, 'gm'));
        process.kill(victim.pid, 'SIGKILL');

        await waitForOutput(
          stack,
          (o) => countMatches(o, new RegExp(`^${name} restarted \\(pid \\d+\\)$`, 'gm')) > restartsBefore,
          `the ${name} restarted`,
          120_000,
        );
        assert.match(
          stack.output(),
          new RegExp(`^${name} exited unexpectedly \\(signal SIGKILL\\); restarting it in`, 'm'),
        );
        const restarted = recordChildren(supervisor).find((c) => pattern.test(c.args));
        assert.ok(restarted && restarted.pid !== victim.pid, `the ${name} was not started again`);

        const ended = await pollRunEnd(baseUrl, first.apiKey, run.id, { tolerateOutage: true });
        assert.equal(ended.status, 'completed', JSON.stringify(ended));
        assert.deepEqual(
          { total: ended.counts.total, done: ended.counts.done, failed: ended.counts.failed },
          { total: 20_000, done: 20_000, failed: 0 },
        );
        assert.equal(await stateValue(baseUrl, first.apiKey, stateUrl), countBefore + 20_000, 'each item counted once');
        assert.ok(!stack.hasExited(), 'the supervisor stays up');
      });
    }

    it('stops on Ctrl-C (SIGINT to the terminal process group: npm and the supervisor) and leaves nothing running', async function () {
      const stack = launched.at(-1);
      assert.ok(stack && !stack.hasExited(), 'the second start is not running');
      recordChildren(supervisorPid(stack));
      const groups = new Set(knownGroups);
      killGroup(stack.pid, 'SIGINT');
      await waitForExit(stack, 120_000);
      assert.match(stack.output(), /stopping Cadre/);
      await assertNothingLeft(groups, dataDir, ports);
    });

    it('stops on SIGTERM to the supervisor itself and leaves nothing running', async function () {
      assert.ok(first, 'needs the first start');
      const stack = launch(stackEnv(dataDir, ports), checkout);
      await waitForOutput(stack, (o) => banner(o) !== '', 'banner', 300_000);
      recordChildren(stack.pid);
      const groups = new Set(knownGroups);
      process.kill(stack.pid, 'SIGTERM');
      const { code, signal } = await waitForExit(stack, 120_000);
      assert.equal(signal, null, tail(stack.output()));
      assert.equal(code, 0, tail(stack.output()));
      await assertNothingLeft(groups, dataDir, ports);
    });
  });

  describe('bad configuration fails fast with one line that says what to fix', function () {
    /** Runs the supervisor to its exit and checks the one-line failure. */
    async function failsWithOneLine(env: NodeJS.ProcessEnv, mentions: (string | RegExp)[]) {
      const stack = launch(env);
      const { code, signal } = await waitForExit(stack, 120_000);
      const out = stack.output();
      assert.equal(signal, null, out);
      assert.equal(code, 1, out);
      const lines = out.split('\n').filter((l) => l.trim() !== '');
      assert.ok(!lines.some((l) => l.startsWith('    at ')), `a stack trace instead of one line:\n${out}`);
      assert.equal(lines.length, 1, `expected exactly one line, got:\n${out}`);
      for (const m of mentions) {
        if (typeof m === 'string') assert.ok(lines[0].includes(m), `"${lines[0]}" should mention ${m}`);
        else assert.match(lines[0], m);
      }
      return lines[0];
    }

    it('CADRE_WEB_PORT already in use: names the port and CADRE_WEB_PORT', async function () {
      const ports = await stackPorts();
      const holder = net.createServer();
      await new Promise<void>((resolve, reject) => {
        holder.once('error', reject);
        holder.listen(ports.web, '127.0.0.1', () => resolve());
      });
      try {
        await failsWithOneLine(stackEnv(tempDir('cadre-stack-bad-'), ports), [String(ports.web), 'CADRE_WEB_PORT']);
      } finally {
        await new Promise((r) => holder.close(r));
      }
    });

    it('an unwritable data dir: names CADRE_DATA_DIR', async function () {
      await failsWithOneLine(stackEnv('/proc/cadre-test', await stackPorts()), ['CADRE_DATA_DIR']);
      assert.equal(fs.existsSync('/proc/cadre-test'), false);
    });

    it('TEMPORAL_ADDRESS at a closed port: names TEMPORAL_ADDRESS', async function () {
      const [closed] = await freePorts(1);
      const env = stackEnv(tempDir('cadre-stack-bad-'), await stackPorts(), {
        TEMPORAL_ADDRESS: `127.0.0.1:${closed}`,
      });
      await failsWithOneLine(env, ['TEMPORAL_ADDRESS', `127.0.0.1:${closed}`]);
    });

    it('CADRE_WEB_PORT=notaport: names CADRE_WEB_PORT', async function () {
      const env = stackEnv(tempDir('cadre-stack-bad-'), await stackPorts(), { CADRE_WEB_PORT: 'notaport' });
      await failsWithOneLine(env, ['CADRE_WEB_PORT', 'notaport']);
    });

    it('DATABASE_URL at a Postgres without pgvector: names DATABASE_URL and pgvector', async function () {
      // Needs a real Postgres with no pgvector: Debian's postgresql package, started here on a free port with a
      // throwaway cluster. Without it (or with pgvector installed, so no server without it) the case is skipped.
      const pg = findDebianPostgres();
      if (!pg) this.skip();
      const dir = tempDir('cadre-stack-pg-');
      const [port] = await freePorts(1);
      const owner = pgOwner();
      if (process.getuid?.() === 0 && !owner) this.skip(); // root, and no `postgres` user to run it as
      if (owner) fs.chownSync(dir, owner.uid, owner.gid);
      const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};
      const init = spawnSync(
        path.join(pg.bin, 'initdb'),
        ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync'],
        { ...asOwner, cwd: dir, encoding: 'utf8', timeout: 120_000, env: { ...process.env, LC_ALL: 'C' } },
      );
      assert.equal(init.status, 0, `initdb failed: ${init.stderr}`);
      const server = spawn(
        path.join(pg.bin, 'postgres'),
        [
          '-D',
          path.join(dir, 'data'),
          '-p',
          String(port),
          '-k',
          dir,
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          'fsync=off',
        ],
        { ...asOwner, cwd: dir, detached: true, stdio: 'ignore' },
      );
      const serverExited = new Promise<void>((r) => server.once('exit', () => r()));
      cleanups.push(async () => {
        killGroup(server.pid!, 'SIGTERM');
        await Promise.race([serverExited, sleep(10_000)]);
        killGroup(server.pid!);
      });
      await waitFor('the Debian Postgres', () => tcpOpen(port), 60_000);

      const env = stackEnv(tempDir('cadre-stack-bad-'), await stackPorts(), {
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres`,
      });
      await failsWithOneLine(env, ['DATABASE_URL', /pgvector/]);
    });
  });
});

/** Debian's postgresql (newest major under /usr/lib/postgresql) if installed and without pgvector. */
function findDebianPostgres(): { bin: string } | undefined {
  const base = '/usr/lib/postgresql';
  if (!fs.existsSync(base)) return undefined;
  const majors = fs
    .readdirSync(base)
    .filter((v) => /^\d+$/.test(v) && fs.existsSync(path.join(base, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  const v = majors[0];
  if (!v) return undefined;
  if (fs.existsSync(`/usr/share/postgresql/${v}/extension/vector.control`)) return undefined;
  return { bin: path.join(base, v, 'bin') };
}

/** Postgres refuses to run as root: as root, run it as the `postgres` user Debian's package creates. */
function pgOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
}
