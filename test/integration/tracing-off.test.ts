// Tracing off costs nothing (issue 37): with no OTLP endpoint, the real web and worker processes (scripts/web.ts,
// scripts/worker.ts, unchanged) serve a run over the API without ever loading the OpenTelemetry SDK, an exporter,
// an instrumentation or Temporal's OpenTelemetry interceptors, and the run's workflow and activities carry no trace
// context. The same processes with an endpoint load them and carry it, which shows what the first test looks for.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { createHarness, createLiveAgent, createTestWorkspace, type Harness } from '../support/harness';
import { freePort } from '../support/ports';
import { stopChild } from '../support/jaeger';
import { startHttpSink, type HttpSink } from '../support/sinks';
import { waitFor } from '../../scripts/supervisor';
import { runWorkflowId } from '../../model/run-identity';

const root = path.resolve(__dirname, '../..');

/** What turning tracing on loads: the SDK, its exporters and resources, the instrumentations, Temporal's interceptors. */
const tracingPackage =
  /^@opentelemetry\/(sdk-|exporter-|instrumentation|resources|otlp-|core$)|^@temporalio\/interceptors-opentelemetry$/;

/**
 * Preloaded into each process (`--import`): as the process exits, the files of every CommonJS module it loaded over
 * its whole life go to the file CADRE_TEST_LOADED_MODULES names, so the test sees what the real entry points loaded
 * without changing them. A data: URL of plain JavaScript, since Node runs --import preloads in worker threads too
 * (the Temporal worker's workflow thread), where tsx's hooks are not there yet; only the main thread reports.
 */
const reportLoadedModules = `data:text/javascript,${encodeURIComponent(`
  import fs from 'node:fs';
  import { createRequire } from 'node:module';
  import { isMainThread } from 'node:worker_threads';
  const out = process.env.CADRE_TEST_LOADED_MODULES;
  const { cache } = createRequire(process.cwd() + '/');
  if (out && isMainThread) process.once('exit', () => fs.writeFileSync(out, JSON.stringify(Object.keys(cache))));
`)}`;

/** The packages among the files a process loaded (`@scope/name` or `name`), each once. */
function packagesOf(files: string[]): string[] {
  const names = files
    .filter((f) => f.includes('/node_modules/'))
    .map((f) => {
      const [first, second] = f.split('/node_modules/').pop()!.split('/');
      return first.startsWith('@') ? `${first}/${second}` : first;
    });
  return [...new Set(names)].sort();
}

interface Observed {
  run: { status: string; trace_id: string | null };
  /** The packages each process loaded over its whole life, start to exit. */
  loaded: { web: string[]; worker: string[] };
  /** Each event of the run's workflow history: its type and the fields of its header, if it has one. */
  events: { type: string; header: string[] }[];
}

describe('tracing off (no OTLP endpoint)', function () {
  this.timeout(300_000);
  let h: Harness;
  let sink: HttpSink;

  before(async () => {
    h = await createHarness({ worker: false });
    sink = await startHttpSink();
  });
  after(async () => {
    await h?.close();
    await sink?.close();
  });

  /**
   * Starts the web and the worker as processes of their own, as production runs them, with `otel` added to their
   * environment; runs one run over the API through a per-item step (so its history has activity tasks, whose
   * headers the workflow's interceptors would fill) and stops both.
   */
  async function serveOneRun(otel: Record<string, string>, queue: string): Promise<Observed> {
    const { key, workspace } = await createTestWorkspace(h);
    // A tool call (an HTTP request to the sink) is a per-item step: the run's items go through activities, whose
    // headers the workflow's interceptors would fill, not the one local activity of a run without such steps.
    const spec = JSON.parse(fs.readFileSync(path.join(root, 'examples/notify-webhook.json'), 'utf8'));
    spec.nodes[2].arguments.url = `${sink.url}/hook`;
    delete spec.policy; // no approval to wait for
    const agent = await createLiveAgent(h, workspace.id, spec);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = {
      ...h.stack.env,
      TEMPORAL_ADDRESS: h.temporalConfig.address,
      TEMPORAL_TASK_QUEUE: `${h.temporalConfig.taskQueue}-${queue}`,
      CADRE_WEB_PORT: String(port),
      CADRE_API_RATE_LIMIT: '0',
      CADRE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      // Nothing from the environment mocha runs in: only what the test names.
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      OTEL_SDK_DISABLED: '',
      OTEL_TRACES_EXPORTER: '',
      ...otel,
    };
    const start = (script: string, out: string): ChildProcess => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--import', reportLoadedModules, script], {
        cwd: root,
        env: { ...env, CADRE_TEST_LOADED_MODULES: out },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout!.on('data', (d) => (output += d));
      child.stderr!.on('data', (d) => (output += d));
      child.once('exit', (code, signal) => {
        if (code !== 0 && signal === null) console.error(`${script} exited (${code}):\n${output}`);
      });
      return child;
    };
    const web = start('scripts/web.ts', modulesFile(queue, 'web'));
    const worker = start('scripts/worker.ts', modulesFile(queue, 'worker'));
    try {
      // Ready once the worker polls the queue too (api/readiness.ts).
      await waitFor(
        'the web process and its worker',
        async () => assert.ok((await fetch(`${url}/readyz`)).ok),
        180_000,
      );
      const api = (p: string, init: RequestInit = {}) =>
        fetch(`${url}${p}`, {
          ...init,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
        });
      const started = await api(`/v1/agents/${agent.id}/run`, {
        method: 'POST',
        body: JSON.stringify({ input: JSON.stringify([{ id: queue, amount: 5000 }]) }),
      });
      assert.equal(started.status, 202, await started.clone().text());
      const { id: runId } = (await started.json()) as { id: string };
      let run: Observed['run'] | undefined;
      await waitFor(
        'the run to end',
        async () => {
          run = (await (await api(`/v1/runs/${runId}`)).json()) as Observed['run'];
          assert.ok(['completed', 'needs_review', 'failed'].includes(run.status), `the run is ${run.status}`);
          assert.ok(
            sink.requests.some((r) => (r.body as { id?: string } | undefined)?.id === queue),
            'the tool call reached the sink',
          );
        },
        120_000,
      );
      const history = await h.client.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
      return { run: run!, loaded: { web: [], worker: [] }, events: (history.events ?? []).map(eventOf) };
    } finally {
      // The module lists are written as each process exits: everything it loaded, shutdown included.
      await Promise.all([stopChild(web), stopChild(worker)]);
    }
  }

  const modulesFile = (queue: string, process: string) =>
    path.join(h.stack.dataDir, `${queue}-${process}-modules.json`);

  async function observe(otel: Record<string, string>, queue: string): Promise<Observed> {
    const observed = await serveOneRun(otel, queue);
    const read = (p: string) => packagesOf(JSON.parse(fs.readFileSync(p, 'utf8')) as string[]);
    observed.loaded = { web: read(modulesFile(queue, 'web')), worker: read(modulesFile(queue, 'worker')) };
    return observed;
  }

  it('serves a run without loading the OpenTelemetry SDK or interceptors, and the run carries no trace', async () => {
    const off = await observe({}, 'off');
    assert.equal(off.run.status, 'completed');
    assert.deepEqual(
      off.loaded.web.filter((p) => tracingPackage.test(p)),
      [],
    );
    assert.deepEqual(
      off.loaded.worker.filter((p) => tracingPackage.test(p)),
      [],
    );
    assert.ok(
      off.loaded.worker.includes('@temporalio/worker') && off.loaded.web.includes('express'),
      'the lists are of the real processes',
    );
    assert.equal(off.run.trace_id, null);
    // No interceptor wrote to the workflow start (the web's client) or to the activities it scheduled (the workflow).
    assert.ok(
      off.events.some((e) => e.type === 'ACTIVITY_TASK_SCHEDULED'),
      'the run scheduled activities, whose headers the workflow interceptors would fill',
    );
    assert.deepEqual(
      off.events.filter((e) => e.header.length > 0),
      [],
    );
  });

  it('with an endpoint, the same processes load them and the run carries its trace (what the test above looks for)', async () => {
    // Nothing listens there: the spans are dropped, but everything that makes them runs.
    const on = await observe({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}` }, 'on');
    assert.equal(on.run.status, 'completed');
    for (const p of [
      '@opentelemetry/sdk-node',
      '@opentelemetry/exporter-trace-otlp-proto',
      '@opentelemetry/instrumentation-http',
    ])
      assert.ok(on.loaded.web.includes(p) && on.loaded.worker.includes(p), p);
    assert.ok(on.loaded.worker.includes('@temporalio/interceptors-opentelemetry'));
    assert.match(on.run.trace_id ?? '', /^[0-9a-f]{32}$/);
    const traced = (type: string) => on.events.some((e) => e.type === type && e.header.includes('_tracer-data'));
    assert.ok(traced('WORKFLOW_EXECUTION_STARTED'), JSON.stringify(on.events));
    assert.ok(traced('ACTIVITY_TASK_SCHEDULED'), JSON.stringify(on.events));
  });
});

/** An event's type (ACTIVITY_TASK_SCHEDULED, …) and its header's field names (`_tracer-data` is the trace context). */
function eventOf(event: temporal.api.history.v1.IHistoryEvent): Observed['events'][number] {
  const type = String(temporal.api.enums.v1.EventType[event.eventType ?? 0]).replace(/^EVENT_TYPE_/, '');
  for (const [key, attributes] of Object.entries(event)) {
    if (!key.endsWith('EventAttributes') || !attributes || typeof attributes !== 'object') continue;
    const header = (attributes as { header?: { fields?: Record<string, unknown> | null } | null }).header;
    return { type, header: Object.keys(header?.fields ?? {}) };
  }
  return { type, header: [] };
}
