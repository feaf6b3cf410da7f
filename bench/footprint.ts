// `npm run bench:footprint`: what `npm start` costs a machine. Starts it as a newcomer would (`npm start` in this
// checkout, in a session of its own, on a fresh temporary CADRE_DATA_DIR and free ports), times it to its banner,
// waits until 20 s after it is healthy, then prints the memory of every process of the tree (npm, the supervisor,
// the Temporal dev server, the embedded Postgres, the worker, the web and whatever they started), named by role,
// and the total against n8n's idle figure (481 MB). With --run, then peak memory per process (sampled every
// 250 ms) and the API's answer times during a run of 10,000 CSV rows (--items=N) of the order-counting example, started over the API with
// the key the banner prints, and then during the indexing of 20 scanned PDFs (--pdfs=N; image-only pages, read by
// OCR) uploaded in one request. Then stops it with SIGTERM to its process group and times a warm start: `npm start`
// again on the same data dir with everything built (--no-warm skips it). Stops everything at the end, on failure
// too. Prints figures (never asserted); the last line is one JSON object.
//
//   npm run bench:footprint [-- --run] [-- --items=10000] [-- --pdfs=20] [-- --settle=20] [-- --no-warm]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { maxFilesPerUpload } from '../api/source-upload';
import { freePorts } from '../test/support/ports';
import { scannedPdf } from '../test/support/source-samples';

const root = path.resolve(__dirname, '..');

const n8nIdleMb = 481;
const flag = (name: string) => process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
const flagValue = (name: string, fallback: number) => Number(flag(name)?.split('=')[1] ?? fallback);
const withRun = flag('run') !== undefined || flag('items') !== undefined;
const withWarmStart = flag('no-warm') === undefined;
const items = flagValue('items', 10_000);
const pdfs = flagValue('pdfs', 20);
const settleSeconds = flagValue('settle', 20);

interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  args: string;
  /** Resident set size and proportional set size (shared pages divided among the processes sharing them), in kB. */
  rssKb: number;
  pssKb: number;
  /** CPU time spent by the process and its children it has waited for, in clock ticks (1/100 s). */
  cpuTicks: number;
  role: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (kb: number) => Math.round(kb / 1024);

function readProc(pid: number): Omit<Proc, 'role'> | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    let pssKb = 0;
    try {
      pssKb = Number(/^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // no smaps_rollup (older kernels): RSS only
    }
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    const cpuTicks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(stat[i]), 0); // utime, stime, cutime, cstime
    return { pid, ppid: field('PPid'), pgid: Number(stat[2]), args, rssKb: field('VmRSS'), pssKb, cpuTicks };
  } catch {
    return undefined; // gone since the listing
  }
}

/** What a process of the tree is, from its command line and its parent's role. */
function roleOf(p: Omit<Proc, 'role'>, parentRole: string | undefined): string {
  const a = p.args;
  if (parentRole === undefined) return 'npm start';
  if (/scripts\/start\.(ts|cjs)/.test(a)) return 'supervisor';
  if (/\btemporal server start-dev\b/.test(a)) return 'temporal';
  if (/scripts\/embedded-node\.[jt]s/.test(a)) return 'app (db + worker + web)';
  const script = /scripts\/(db|worker|web)\.[jt]s/.exec(a)?.[1];
  if (script) return script;
  const name = path.basename(a.split(' ')[0] ?? '?');
  return `${parentRole}: ${/esbuild/.test(a) ? 'esbuild (tsx)' : name}`;
}

/** Every live process under `rootPid` (itself included), each named by role. */
function processTree(rootPid: number): Proc[] {
  const all = fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map((e) => readProc(Number(e)))
    .filter((p): p is Omit<Proc, 'role'> => p !== undefined);
  const out: Proc[] = [];
  const visit = (pid: number, parentRole: string | undefined) => {
    const p = all.find((x) => x.pid === pid);
    if (!p || p.args === '') return; // a zombie has no command line and no memory
    const role = roleOf(p, parentRole);
    out.push({ ...p, role });
    for (const c of all.filter((x) => x.ppid === pid)) visit(c.pid, role);
  };
  visit(rootPid, undefined);
  return out;
}

/** Sums by role (a role can have several processes, e.g. tsx's esbuild services). */
function byRole(procs: Proc[]): Map<string, { rssKb: number; pssKb: number; count: number }> {
  const m = new Map<string, { rssKb: number; pssKb: number; count: number }>();
  for (const p of procs) {
    const r = m.get(p.role) ?? { rssKb: 0, pssKb: 0, count: 0 };
    r.rssKb += p.rssKb;
    r.pssKb += p.pssKb;
    r.count += 1;
    m.set(p.role, r);
  }
  return m;
}

function printTable(title: string, rows: [string, { rssKb: number; pssKb?: number; count?: number }][]) {
  console.log(title);
  console.log(`  ${'process'.padEnd(34)} ${'RSS MB'.padStart(7)} ${'PSS MB'.padStart(7)}`);
  for (const [role, r] of rows) {
    const name = r.count && r.count > 1 ? `${role} (×${r.count})` : role;
    const pss = r.pssKb === undefined ? '' : String(mb(r.pssKb));
    console.log(`  ${name.padEnd(34)} ${String(mb(r.rssKb)).padStart(7)} ${pss.padStart(7)}`);
  }
}

interface Started {
  output: () => string;
  tree: () => Proc[];
  /** Seconds from the spawn of `npm start` to its banner. */
  bannerSeconds: number;
  /**
   * CPU seconds its processes spent until the banner (children that ended before, e.g. a build, included): what the
   * start costs whatever else the machine runs, where the seconds to the banner depend on it.
   */
  cpuSeconds: number;
  /** SIGTERM to its process group, as Ctrl-C would; then SIGKILL to whatever of its groups is left. */
  stop: () => Promise<void>;
}

/** `npm start` in this checkout on `env`, in a session of its own, until its banner. Stopped on failure. */
async function startNpm(env: NodeJS.ProcessEnv, logFile: string): Promise<Started> {
  const t0 = performance.now();
  // detached: a session and process group of its own (setsid), as in a terminal of its own.
  const npm = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pgid = npm.pid!;
  let output = '';
  const log = fs.createWriteStream(logFile, { flags: 'a' });
  for (const s of [npm.stdout!, npm.stderr!])
    s.on('data', (d: Buffer) => {
      output += d.toString();
      log.write(d);
    });
  let exited = false;
  const exit = new Promise<void>((r) => npm.once('exit', () => ((exited = true), r())));
  /** Every process group seen in the tree (the supervisor's children each lead one): the cleanup's list. */
  const groups = new Set<number>([pgid]);
  const tree = () => {
    const procs = processTree(npm.pid!);
    for (const p of procs) groups.add(p.pgid);
    return procs;
  };
  const stop = async () => {
    if (!exited) {
      try {
        process.kill(-pgid, 'SIGTERM'); // npm and the supervisor, which stops its children in order
      } catch {
        // already gone
      }
      await Promise.race([exit, sleep(60_000)]);
    }
    // Anything still alive in a group of the tree (a child that did not stop, or the stop timed out).
    for (const g of groups) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
    log.end();
  };
  stopping.push(stop);

  const deadline = Date.now() + 420_000;
  while (!output.includes('Cadre is running')) {
    if (exited) throw new Error(`npm start exited before its banner:\n${output.split('\n').slice(-30).join('\n')}`);
    if (Date.now() > deadline) throw new Error(`no banner within 420 s:\n${output.split('\n').slice(-30).join('\n')}`);
    await sleep(50);
    tree(); // record the process groups as they appear
  }
  const bannerSeconds = (performance.now() - t0) / 1000;
  const cpuSeconds = tree().reduce((sum, p) => sum + p.cpuTicks, 0) / 100;
  return { output: () => output, tree, bannerSeconds, cpuSeconds, stop };
}

/** What a start built before its banner, from its output. */
function builds(output: string): string {
  const built = [
    output.includes('building the server code') && 'the server code',
    output.includes('building the console') && 'the console',
  ].filter(Boolean);
  return built.length > 0 ? ` (including a build of ${built.join(' and ')})` : '';
}

/** The stops of every `npm start` begun, for the cleanup. */
const stopping: (() => Promise<void>)[] = [];

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-footprint-'));
  const [web, db, temporal, temporalUi] = await freePorts(4);
  const baseUrl = `http://127.0.0.1:${web}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CADRE_DATA_DIR: dataDir,
    CADRE_WEB_PORT: String(web),
    CADRE_DB_PORT: String(db),
    CADRE_TEMPORAL_PORT: String(temporal),
    CADRE_TEMPORAL_UI_PORT: String(temporalUi),
    CADRE_PUBLIC_URL: '',
    DATABASE_URL: '',
    TEMPORAL_ADDRESS: '',
    FORCE_COLOR: '0',
  };
  // Whatever npm_* variables `npm run` set for this benchmark would leak into the `npm start` below.
  for (const k of Object.keys(env)) if (k.startsWith('npm_')) delete env[k];
  const logFile = path.join(dataDir, 'start.log');

  const cleanUp = async () => {
    for (const stop of stopping) await stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const onSignal = () => void cleanUp().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const first = await startNpm(env, logFile);
    console.log(
      `npm start: banner after ${first.bannerSeconds.toFixed(1)} s, ${first.cpuSeconds.toFixed(1)} s of CPU${builds(first.output())}; data dir ${dataDir}`,
    );
    const ready = await fetch(`${baseUrl}/readyz`);
    console.log(`readyz: ${ready.status}; waiting ${settleSeconds} s…`);
    await sleep(settleSeconds * 1000);

    const idle = first.tree();
    const idleRoles = byRole(idle);
    const idleRss = idle.reduce((s, p) => s + p.rssKb, 0);
    const idlePss = idle.reduce((s, p) => s + p.pssKb, 0);
    printTable(
      `\nidle, ${settleSeconds} s after healthy (${idle.length} processes):`,
      [...idleRoles].sort((a, b) => b[1].rssKb - a[1].rssKb),
    );
    console.log(
      `  ${'total'.padEnd(34)} ${String(mb(idleRss)).padStart(7)} ${String(mb(idlePss)).padStart(7)}   (n8n idles at ${n8nIdleMb} MB: ${mb(idleRss) <= n8nIdleMb ? 'below' : `${mb(idleRss) - n8nIdleMb} MB above`})`,
    );
    const result: Record<string, unknown> = {
      banner_s: Number(first.bannerSeconds.toFixed(1)),
      banner_cpu_s: Number(first.cpuSeconds.toFixed(1)),
      idle_rss_mb: mb(idleRss),
      idle_pss_mb: mb(idlePss),
      n8n_idle_mb: n8nIdleMb,
      idle_by_role_mb: Object.fromEntries([...idleRoles].map(([k, v]) => [k, mb(v.rssKb)])),
    };

    if (withRun) {
      const key = /\bcadre_[A-Za-z0-9]+_[A-Za-z0-9_-]{16,}/.exec(first.output())?.[0];
      if (!key) throw new Error('no API key in the banner (was the data dir fresh?)');
      Object.assign(result, await peakDuringRun(key, baseUrl, first.tree));
      if (pdfs > 0) Object.assign(result, await peakDuringIndexing(key, baseUrl, first.tree));
    }

    if (withWarmStart) {
      // Everything is built and the data dir exists: what a restart (a reboot, an upgrade without changes) waits.
      await first.stop();
      const warm = await startNpm(env, logFile);
      console.log(
        `\nwarm start (same data dir, everything built): banner after ${warm.bannerSeconds.toFixed(1)} s, ${warm.cpuSeconds.toFixed(1)} s of CPU${builds(warm.output())}`,
      );
      result.warm_banner_s = Number(warm.bannerSeconds.toFixed(1));
      result.warm_banner_cpu_s = Number(warm.cpuSeconds.toFixed(1));
    }
    console.log(JSON.stringify(result));
  } finally {
    await cleanUp();
  }
}

/** Peak RSS per process and of the whole tree while `work` runs, sampled every 250 ms. */
async function peakDuring<T>(tree: () => Proc[], work: () => Promise<T>) {
  const peak = new Map<string, number>();
  let peakTotal = 0;
  const sample = () => {
    const procs = tree();
    for (const [role, r] of byRole(procs)) peak.set(role, Math.max(peak.get(role) ?? 0, r.rssKb));
    peakTotal = Math.max(
      peakTotal,
      procs.reduce((s, p) => s + p.rssKb, 0),
    );
  };
  const sampler = setInterval(sample, 250);
  try {
    const result = await work();
    sample();
    return { result, peak, peakTotal };
  } finally {
    clearInterval(sampler);
  }
}

function printPeak(peak: Map<string, number>, peakTotal: number) {
  printTable(
    'peak RSS per process (sampled every 250 ms):',
    [...peak].sort((a, b) => b[1] - a[1]).map(([role, rssKb]) => [role, { rssKb }]),
  );
  console.log(`  ${'total (largest sum of one sample)'.padEnd(34)} ${String(mb(peakTotal)).padStart(7)}`);
}

/** Uploads `pdfs` one-page scanned PDFs in uploads of at most the API's limit; peak RSS until all are indexed. */
async function peakDuringIndexing(key: string, baseUrl: string, tree: () => Proc[]) {
  const scan = await scannedPdf([
    ['Invoice 4471 from Globex Corporation', 'is due on the first of June.'],
    ['Late payments incur a fee of two percent per month.'],
  ]);
  const forms: FormData[] = [];
  for (let i = 0; i < pdfs; i++) {
    if (i % maxFilesPerUpload === 0) forms.push(new FormData());
    forms[forms.length - 1].append('files', new Blob([Buffer.from(scan.bytes)]), `scan-${i}.pdf`);
  }
  const headers = { Authorization: `Bearer ${key}` };
  const t = performance.now();
  const { result, peak, peakTotal } = await peakDuring(tree, async () => {
    const ids: string[] = [];
    for (const body of forms) {
      const res = await fetch(`${baseUrl}/v1/sources`, { method: 'POST', headers, body });
      const answer = (await res.json()) as { data?: { id: string }[] };
      if (!answer.data) throw new Error(`uploading the PDFs answered ${res.status}: ${JSON.stringify(answer)}`);
      ids.push(...answer.data.map((s) => s.id));
    }
    const statuses: string[] = [];
    const deadline = Date.now() + 900_000;
    for (const id of ids) {
      for (;;) {
        const s = (await (await fetch(`${baseUrl}/v1/sources/${id}`, { headers })).json()) as {
          latest_version: { status: string };
        };
        if (s.latest_version.status !== 'indexing') {
          statuses.push(s.latest_version.status);
          break;
        }
        if (Date.now() > deadline) throw new Error(`source ${id} is still indexing after 900 s`);
        await sleep(500);
      }
    }
    return statuses;
  });
  const seconds = (performance.now() - t) / 1000;
  const ready = result.filter((s) => s === 'ready').length;
  console.log(`\nindexing ${pdfs} scanned PDFs (OCR): ${ready} ready, ${pdfs - ready} not, in ${seconds.toFixed(1)} s`);
  printPeak(peak, peakTotal);
  return {
    index_pdfs: pdfs,
    index_ready: ready,
    index_s: Number(seconds.toFixed(1)),
    index_peak_rss_mb: mb(peakTotal),
    index_peak_by_role_mb: Object.fromEntries([...peak].map(([k, v]) => [k, mb(v)])),
  };
}

/**
 * Starts a run of `items` rows of the order-counting example with the banner's key; peak RSS while it runs, and how
 * fast the API answers meanwhile (GET of the run every 200 ms): the web shares its process with the worker.
 */
async function peakDuringRun(key: string, baseUrl: string, tree: () => Proc[]) {
  const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const agents = (await (await fetch(`${baseUrl}/v1/agents`, { headers })).json()) as {
    data: { id: string; name: string }[];
  };
  const agent = agents.data.find((a) => a.name === 'Count orders and write an XLSX report');
  if (!agent) throw new Error(`no order-counting example agent among ${agents.data.map((a) => a.name).join(', ')}`);
  const rows = Array.from({ length: items }, (_, i) => `O-${i},${(i % 7) + 1}`);
  const answers: number[] = [];
  const t = performance.now();
  const {
    result: ended,
    peak,
    peakTotal,
  } = await peakDuring(tree, async () => {
    const res = await fetch(`${baseUrl}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ input: ['order,quantity', ...rows].join('\n') }),
    });
    const run = (await res.json()) as { id: string; status: string; counts: Record<string, number> };
    if (res.status !== 202) throw new Error(`starting the run answered ${res.status}: ${JSON.stringify(run)}`);
    let last = run;
    const deadline = Date.now() + 600_000;
    while (last.status === 'running') {
      if (Date.now() > deadline) throw new Error(`the run is still running after 600 s: ${JSON.stringify(last)}`);
      await sleep(200);
      const asked = performance.now();
      last = (await (await fetch(`${baseUrl}/v1/runs/${run.id}`, { headers })).json()) as typeof run;
      answers.push(performance.now() - asked);
    }
    return last;
  });
  const seconds = (performance.now() - t) / 1000;
  console.log(
    `\n${items}-item run of "${agent.name}": ${ended.status}, ${ended.counts.done ?? 0} done, ${ended.counts.failed ?? 0} failed, in ${seconds.toFixed(1)} s`,
  );
  answers.sort((a, b) => a - b);
  const at = (q: number) =>
    Number((answers[Math.min(answers.length - 1, Math.floor(q * answers.length))] ?? 0).toFixed(1));
  console.log(
    `GET /v1/runs/{id} meanwhile (${answers.length} asks): p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`,
  );
  printPeak(peak, peakTotal);
  return {
    run_items: items,
    run_status: ended.status,
    run_s: Number(seconds.toFixed(1)),
    run_get_p50_ms: at(0.5),
    run_get_p99_ms: at(0.99),
    run_get_max_ms: at(1),
    peak_rss_mb: mb(peakTotal),
    peak_by_role_mb: Object.fromEntries([...peak].map(([k, v]) => [k, mb(v)])),
  };
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
