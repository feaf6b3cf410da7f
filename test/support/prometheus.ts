// A real Prometheus (built once by scripts/observability-tools.sh) scraping the endpoints a test names every second,
// and its HTTP API's PromQL queries; promtool's linter for an exposition.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';

const toolsBin = path.resolve(__dirname, '../../.tools/bin');
export const prometheusBin = path.join(toolsBin, 'prometheus');
export const promtoolBin = path.join(toolsBin, 'promtool');

/** Builds Prometheus and promtool if `bin` is not there yet (minutes, once). */
function ensureBuilt(bin: string): void {
  if (fs.existsSync(bin)) return;
  const built = spawnSync('bash', [path.resolve(__dirname, '../../scripts/observability-tools.sh')], {
    stdio: 'inherit',
  });
  if (built.status !== 0) throw new Error('scripts/observability-tools.sh failed: Prometheus could not be built');
}

export interface ScrapeJob {
  name: string;
  target: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
}

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

export interface Prometheus {
  url: string;
  /** An instant PromQL query's vector. */
  query(promql: string): Promise<Sample[]>;
  close(): Promise<void>;
}

export async function startPrometheus(jobs: ScrapeJob[]): Promise<Prometheus> {
  ensureBuilt(prometheusBin);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-prometheus-'));
  // JSON is YAML: the scrape configuration as Prometheus's documentation writes it.
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    scrape_configs: jobs.map((j) => ({
      job_name: j.name,
      ...(j.token ? { authorization: { type: 'Bearer', credentials: j.token } } : {}),
      static_configs: [{ targets: [j.target] }],
    })),
  };
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(
    prometheusBin,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${output}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`prometheus did not become ready:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    async query(promql) {
      const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: promql })}`);
      const body = (await res.json()) as {
        status: string;
        error?: string;
        data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
      };
      if (body.status !== 'success') throw new Error(`PromQL ${promql}: ${body.error}`);
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `promtool check metrics` on an exposition: its complaints, empty when it passes. */
export function promtoolCheckMetrics(exposition: string): { ok: boolean; output: string } {
  ensureBuilt(promtoolBin);
  const checked = spawnSync(promtoolBin, ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  return { ok: checked.status === 0, output: `${checked.stdout}${checked.stderr}`.trim() };
}
