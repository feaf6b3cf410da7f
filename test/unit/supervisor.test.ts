// The supervisor of `npm start` with real child processes: a crash once the stack is up is restarted with backoff
// while the others stay up; a child that keeps crashing, or whose data has gone, stops everything; a crash while
// the stack is still starting fails the start. (test/e2e/stack.test.ts kills the real stack's children.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { backgroundNice } from '../../scripts/priority';
import { Supervisor, type ChildSpec, type RestartPolicy } from '../../scripts/supervisor';

const policy: RestartPolicy = { initialDelayMs: 50, maxDelayMs: 400, crashWindowMs: 30_000, maxCrashesInWindow: 3 };

/** A node child running `code`. */
const nodeChild = (name: string, code: string, more: Partial<ChildSpec> = {}): ChildSpec => ({
  name,
  command: process.execPath,
  args: ['-e', code],
  ...more,
});
const stayUp = 'process.on("SIGTERM", () => process.exit(0)); setInterval(() => {}, 1000);';

function harness() {
  const log: string[] = [];
  let exitCode: number | undefined;
  let onExit: () => void = () => undefined;
  const exited = new Promise<number>((resolve) => (onExit = () => resolve(exitCode!)));
  const supervisor = new Supervisor({
    cwd: process.cwd(),
    env: process.env,
    policy,
    log: (line) => log.push(line),
    exit: (code) => {
      exitCode = code;
      onExit();
    },
  });
  return { supervisor, log, exited, exitCode: () => exitCode };
}

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const alive = (pid: number | undefined) => {
  try {
    process.kill(pid!, 0);
    return true;
  } catch {
    return false;
  }
};

describe('supervisor (scripts/supervisor.ts)', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-supervisor-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('restarts a crashed child once the stack is up and leaves the others running', async () => {
    const h = harness();
    const steady = h.supervisor.start(nodeChild('db', stayUp));
    const flaky = h.supervisor.start(nodeChild('worker', stayUp));
    h.supervisor.healing = true;
    const steadyPid = steady.child.pid;
    const firstPid = flaky.child.pid!;
    process.kill(firstPid, 'SIGKILL');
    await until('the worker to be restarted', () => flaky.child.pid !== firstPid && alive(flaky.child.pid));
    assert.equal(steady.child.pid, steadyPid, 'the other child must not be restarted');
    assert.ok(alive(steadyPid), 'the other child must keep running');
    assert.equal(h.exitCode(), undefined, 'the supervisor must not give up after one crash');
    assert.ok(h.log.some((l) => /worker exited unexpectedly \(signal SIGKILL\); restarting it in 0\.05 s/.test(l)));
    assert.ok(
      h.log.some((l) => l === `worker restarted (pid ${flaky.child.pid})`),
      h.log.join('\n'),
    );

    await h.supervisor.shutdown(0);
    assert.equal(await h.exited, 0);
    assert.ok(!alive(steadyPid) && !alive(flaky.child.pid), 'shutdown stops every child');
  });

  it("gives a child the variables of its spec on top of its own environment (the app's malloc settings)", async () => {
    const h = harness();
    const out = path.join(dir, 'env.json');
    h.supervisor.start(
      nodeChild(
        'app',
        `require("fs").writeFileSync(${JSON.stringify(out)}, JSON.stringify({ arenas: process.env.MALLOC_ARENA_MAX, path: process.env.PATH })); ${stayUp}`,
        { env: { MALLOC_ARENA_MAX: '2' } },
      ),
    );
    await until('the child wrote its environment', () => fs.existsSync(out) && fs.statSync(out).size > 0);
    const seen = JSON.parse(fs.readFileSync(out, 'utf8')) as { arenas: string; path: string };
    assert.equal(seen.arenas, '2');
    assert.equal(seen.path, process.env.PATH, 'the rest of the environment is kept');
    await h.supervisor.shutdown(0);
    assert.equal(await h.exited, 0);
  });

  it("leaves out a child's lines marked quiet (Temporal's harmless start-up ERROR) and prints the rest", async () => {
    const h = harness();
    const printed: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) =>
      String(chunk).includes('[temporal]')
        ? printed.push(String(chunk)) > 0
        : write.call(process.stdout, chunk, ...rest)) as typeof process.stdout.write;
    try {
      h.supervisor.start(
        nodeChild(
          'temporal',
          `console.log('time=1 level=ERROR msg="shard status unknown" shard-id=1'); console.log('time=2 level=WARN msg=started'); ${stayUp}`,
          { quiet: /level=ERROR.*shard status unknown/ },
        ),
      );
      await until('the line after the quiet one', () => printed.some((l) => l.includes('msg=started')));
    } finally {
      process.stdout.write = write;
    }
    assert.ok(!printed.some((l) => l.includes('shard status unknown')), printed.join(''));
    await h.supervisor.shutdown(0);
    assert.equal(await h.exited, 0);
  });

  it("leaves out the lines marked quiet while stopping only once it stops the child (Temporal's shutdown WARNs)", async () => {
    const h = harness();
    const printed: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) =>
      String(chunk).includes('[temporal]')
        ? printed.push(String(chunk)) > 0
        : write.call(process.stdout, chunk, ...rest)) as typeof process.stdout.write;
    // As the dev server does: a WARN while running (shown), then on SIGTERM its parts warn as they lose each other.
    const devServer = `console.log('level=WARN msg="network dial error" while running');
      process.on('SIGTERM', () => {
        console.log('Stopping server...');
        console.log('level=WARN msg="Failed to poll for task." service=worker');
        console.log('level=WARN msg="network dial error" service=client');
        console.log('level=ERROR msg="a real problem"');
        setTimeout(() => process.exit(0), 50);
      });
      setInterval(() => {}, 1000);`;
    try {
      h.supervisor.start(nodeChild('temporal', devServer, { quietWhileStopping: /\blevel=WARN\b/ }));
      await until('the WARN while running', () => printed.some((l) => l.includes('while running')));
      await h.supervisor.shutdown(0);
      assert.equal(await h.exited, 0);
      // Its last lines may still be in the pipe when it has exited.
      await until('the last line it printed', () => printed.some((l) => l.includes('a real problem')));
    } finally {
      process.stdout.write = write;
    }
    const lines = printed.join('');
    assert.match(lines, /network dial error" while running/, 'shown while it runs');
    assert.match(lines, /Stopping server\.\.\./);
    assert.match(lines, /level=ERROR msg="a real problem"/, 'an error is shown while stopping too');
    assert.doesNotMatch(lines, /Failed to poll for task|network dial error" service=client/, lines);
  });

  it('backs off between restarts and gives up, stopping everything, after repeated fast crashes', async () => {
    const h = harness();
    const steady = h.supervisor.start(nodeChild('web', stayUp));
    // Up long enough to be "started", then crashes: every restart crashes again.
    h.supervisor.start(nodeChild('worker', 'setTimeout(() => process.exit(7), 100);'));
    h.supervisor.healing = true;
    assert.equal(await h.exited, 1);
    const delays = h.log
      .map((l) => /^worker exited unexpectedly \(code 7\); restarting it in ([\d.]+) s/.exec(l)?.[1])
      .filter((d) => d !== undefined)
      .map(Number);
    assert.deepEqual(delays, [0.05, 0.1], h.log.join('\n'));
    assert.match(h.log.at(-2)!, /^worker exited unexpectedly \(code 7\): 3 crashes within 30 s; giving up$/);
    assert.ok(!alive(steady.child.pid), 'giving up stops the other children too');
  });

  it('does not restart a child whose data has gone: it stops everything instead', async () => {
    const h = harness();
    const marker = path.join(dir, 'PG_VERSION');
    fs.writeFileSync(marker, '17');
    const db = h.supervisor.start(
      nodeChild('db', stayUp, {
        beforeRestart: () => {
          if (!fs.existsSync(marker)) throw new Error(`the embedded database at ${marker} is gone`);
        },
      }),
    );
    h.supervisor.healing = true;
    fs.rmSync(marker);
    process.kill(db.child.pid!, 'SIGKILL');
    assert.equal(await h.exited, 1);
    assert.ok(h.log.includes(`db cannot be restarted: the embedded database at ${marker} is gone`), h.log.join('\n'));
  });

  it('fails the start when a child crashes before the stack is up', async () => {
    const h = harness();
    const steady = h.supervisor.start(nodeChild('temporal', stayUp));
    h.supervisor.start(nodeChild('db', 'process.exit(2)'));
    assert.equal(await h.exited, 1);
    assert.deepEqual(h.log, ['db exited unexpectedly (code 2); stopping the rest', 'stopping Cadre…']);
    assert.ok(!alive(steady.child.pid));
  });

  it('runs background children, restarts included, at a lower CPU priority than the rest, every thread of them', async () => {
    const h = harness();
    const web = h.supervisor.start(nodeChild('web', stayUp));
    const worker = h.supervisor.start(nodeChild('worker', stayUp, { background: true }));
    h.supervisor.healing = true;
    const own = os.getPriority();
    const lowered = Math.min(19, own + backgroundNice);
    /** The nice value of each thread of `pid` (field 19 of its stat; the name in field 2 has no spaces here). */
    const threadNices = (pid: number) =>
      fs.existsSync(`/proc/${pid}/task`)
        ? fs
            .readdirSync(`/proc/${pid}/task`)
            .map((t) => Number(fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8').split(' ')[18]))
        : [os.getPriority(pid)];
    // `nice` sets the priority, then execs the program: a moment after the start, every thread of it runs lowered.
    const assertLowered = async (pid: number) => {
      await until('the worker to run lowered', () => threadNices(pid).every((n) => n === lowered));
      // Where Linux shares the CPU between sessions first, the worker's session is lowered too.
      if (fs.existsSync(`/proc/${pid}/autogroup`))
        assert.match(fs.readFileSync(`/proc/${pid}/autogroup`, 'utf8'), new RegExp(` nice ${backgroundNice}\\n?$`));
    };
    await until('the children to be running', () => alive(web.child.pid) && alive(worker.child.pid));
    await assertLowered(worker.child.pid!);
    assert.equal(os.getPriority(web.child.pid!), own, 'the web keeps the supervisor’s priority');
    if (fs.existsSync(`/proc/${web.child.pid}/autogroup`))
      assert.match(fs.readFileSync(`/proc/${web.child.pid}/autogroup`, 'utf8'), / nice 0\n?$/);

    const firstPid = worker.child.pid!;
    process.kill(firstPid, 'SIGKILL');
    await until('the worker to be restarted', () => worker.child.pid !== firstPid && alive(worker.child.pid));
    await assertLowered(worker.child.pid!);
    await h.supervisor.shutdown(0);
    assert.equal(await h.exited, 0);
  });

  it('starts a child to lower once up at normal priority, and lowers every thread of it once it says it is up', async () => {
    const h = harness();
    const up = path.join(dir, 'up');
    // Says it is up (as the worker does once it polls) when the test creates the file; stays up.
    const code = `${stayUp} const t = setInterval(() => { if (require('fs').existsSync(${JSON.stringify(up)})) { clearInterval(t); console.log('worker polling task queue "q"'); } }, 20);`;
    const worker = h.supervisor.start(
      nodeChild('worker', code, { background: true, lowerOnceUp: /^worker polling task queue/ }),
    );
    h.supervisor.healing = true;
    const own = os.getPriority();
    const lowered = Math.min(19, own + backgroundNice);
    const threadNices = (pid: number) =>
      fs.existsSync(`/proc/${pid}/task`)
        ? fs
            .readdirSync(`/proc/${pid}/task`)
            .map((t) => Number(fs.readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8').split(' ')[18]))
        : [os.getPriority(pid)];
    await until('the worker to be running', () => alive(worker.child.pid));
    await new Promise((r) => setTimeout(r, 300)); // its threads started
    assert.deepEqual(
      [...new Set(threadNices(worker.child.pid!))],
      [own],
      'starting, it runs at the priority of the rest',
    );
    fs.writeFileSync(up, '');
    await until('every thread of the worker to run lowered', () =>
      threadNices(worker.child.pid!).every((n) => n === lowered),
    );
    if (fs.existsSync(`/proc/${worker.child.pid}/autogroup`))
      assert.match(
        fs.readFileSync(`/proc/${worker.child.pid}/autogroup`, 'utf8'),
        new RegExp(` nice ${backgroundNice}\\n?$`),
      );

    // A restart starts it at normal priority again, and lowers it once it is up.
    const firstPid = worker.child.pid!;
    process.kill(firstPid, 'SIGKILL');
    await until('the worker to be restarted', () => worker.child.pid !== firstPid && alive(worker.child.pid));
    await until('the restarted worker to run lowered', () =>
      threadNices(worker.child.pid!).every((n) => n === lowered),
    );
    await h.supervisor.shutdown(0);
    assert.equal(await h.exited, 0);
  });

  it('does not restart a child that a shutdown stopped', async () => {
    const h = harness();
    const child = h.supervisor.start(nodeChild('worker', stayUp));
    h.supervisor.healing = true;
    await h.supervisor.shutdown(0);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!alive(child.child.pid));
    assert.deepEqual(
      h.log.filter((l) => /restart/.test(l)),
      [],
    );
  });

  it('starts no child once a shutdown has begun (a signal during the start sequence)', async () => {
    const h = harness();
    const first = h.supervisor.start(nodeChild('temporal', stayUp));
    const stopping = h.supervisor.shutdown(0);
    assert.throws(() => h.supervisor.start(nodeChild('worker', stayUp)), /not starting worker: Cadre is stopping/);
    await stopping;
    assert.equal(await h.exited, 0);
    assert.ok(!alive(first.child.pid));
  });
});
