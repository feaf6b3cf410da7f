// Traces end to end against a real Jaeger (v1.76.0, built once by scripts/observability-tools.sh): the web and the
// worker run as processes of their own with OTLP pointed at Jaeger, a run is started over the API whose model step
// calls a tool and searches a source (the local Anthropic-compatible server answers), and Jaeger's query API must
// show one trace from the HTTP request to the GenAI span, parents right, attributes present, no secret or prompt.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createHarness, createLiveAgent, createTestWorkspace, spawnWorker, type Harness } from '../support/harness';
import { freePort } from '../support/ports';
import { startHttpSink, type HttpSink } from '../support/sinks';
import { apiErrors, reply, startFakeAnthropic, text, toolUse, turnOf, type FakeAnthropic } from '../fakes/anthropic';
import { waitFor } from '../../scripts/supervisor';

const root = path.resolve(__dirname, '../..');
const jaegerBin = path.join(root, '.tools/bin/jaeger');

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  logs: { fields: { key: string; value: unknown }[] }[];
  processID: string;
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

/** Jaeger's all-in-one pipeline (OTLP/HTTP in, memory store, query API) on free loopback ports. */
async function startJaeger(dir: string) {
  const [otlp, query, queryGrpc] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'jaeger.yaml');
  fs.writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: { receivers: [otlp], exporters: [jaeger_storage_exporter] }
  telemetry: { metrics: { level: none }, logs: { level: warn } }
extensions:
  jaeger_storage: { backends: { memstore: { memory: { max_traces: 10000 } } } }
  jaeger_query:
    storage: { traces: memstore }
    http: { endpoint: "127.0.0.1:${query}" }
    grpc: { endpoint: "127.0.0.1:${queryGrpc}" }
receivers:
  otlp: { protocols: { http: { endpoint: "127.0.0.1:${otlp}" } } }
exporters:
  jaeger_storage_exporter: { trace_storage: memstore }
`,
  );
  const out = fs.openSync(path.join(dir, 'jaeger.log'), 'a');
  const child = spawn(jaegerBin, [`--config=file:${config}`], { stdio: ['ignore', out, out] });
  const queryUrl = `http://127.0.0.1:${query}`;
  await waitFor('Jaeger', async () => void (await fetch(`${queryUrl}/api/services`)).json(), 60_000);
  return { child, otlpUrl: `http://127.0.0.1:${otlp}`, queryUrl };
}

function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return Promise.resolve();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  return Promise.race([exited, new Promise<void>((r) => setTimeout(r, 10_000))]).then(() => void child.kill('SIGKILL'));
}

const tag = (span: JaegerSpan, key: string) => span.tags.find((t) => t.key === key)?.value;
const parentOf = (trace: JaegerTrace, span: JaegerSpan) =>
  trace.spans.find((s) => s.spanID === span.references.find((r) => r.refType === 'CHILD_OF')?.spanID);
function ancestry(trace: JaegerTrace, span: JaegerSpan): JaegerSpan[] {
  const chain = [span];
  for (let p = parentOf(trace, span); p; p = parentOf(trace, p)) chain.push(p);
  return chain;
}

describe('tracing (OpenTelemetry → real Jaeger)', function () {
  this.timeout(300_000);
  const modelName = 'claude-trace-test';
  const anthropicKey = 'sk-ant-test-SECRET-0f3b9c';
  const promptMarker = 'PROMPT-TEXT-7d1e';
  let jaeger: Awaited<ReturnType<typeof startJaeger>> | undefined;
  let fake: FakeAnthropic;
  let sink: HttpSink;
  let h: Harness;
  let web: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let url: string;
  let apiKey: string;
  let workspaceId: string;

  before(async function () {
    if (!fs.existsSync(jaegerBin)) {
      console.log('    (skipped: no .tools/bin/jaeger; run bash scripts/observability-tools.sh)');
      this.skip();
    }
    fake = await startFakeAnthropic();
    sink = await startHttpSink();
    h = await createHarness({ worker: false });
    jaeger = await startJaeger(h.stack.dataDir);
    ({ key: apiKey } = await createTestWorkspace(h).then((w) => ((workspaceId = w.workspace.id), w)));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const env = {
      ANTHROPIC_API_KEY: anthropicKey,
      ANTHROPIC_BASE_URL: fake.url,
      ANTHROPIC_MODEL: modelName,
      CADRE_HTTP_ALLOW_HOSTS: '127.0.0.1',
      CADRE_EMBEDDINGS: 'off', // full-text retrieval: no embedding model to load
      CADRE_API_RATE_LIMIT: '0',
      CADRE_TRACE_URL: `${jaeger.queryUrl}/trace/{trace_id}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    worker = spawnWorker(h, env);
    let webOutput = '';
    web = spawn(process.execPath, ['--import', 'tsx', 'scripts/web.ts'], {
      cwd: root,
      env: {
        ...h.stack.env,
        TEMPORAL_ADDRESS: h.temporalConfig.address,
        TEMPORAL_TASK_QUEUE: h.temporalConfig.taskQueue,
        CADRE_WEB_PORT: String(port),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    web.stdout!.on('data', (d) => (webOutput += d));
    web.stderr!.on('data', (d) => (webOutput += d));
    web.once('exit', (code) => code && console.error(`web exited (${code}):\n${webOutput}`));
    // Ready once the worker polls the queue too (api/readiness.ts).
    await waitFor('the web process and its worker', async () => assert.ok((await fetch(`${url}/readyz`)).ok), 180_000);
  });

  after(async () => {
    await Promise.all([stop(web), stop(worker)]);
    await stop(jaeger?.child);
    await h?.close();
    await fake?.close();
    await sink?.close();
  });

  const api = (p: string, init: RequestInit = {}) =>
    fetch(`${url}${p}`, { ...init, headers: { authorization: `Bearer ${apiKey}`, ...init.headers } });

  async function indexedSource(name: string, fileName: string, content: string) {
    const form = new FormData();
    form.append('name', name);
    form.append('files', new Blob([content]), fileName);
    const res = await api('/v1/sources', { method: 'POST', body: form });
    assert.equal(res.status, 202, await res.clone().text());
    const [source] = ((await res.json()) as { data: { id: string }[] }).data;
    await waitFor(
      'the source to be indexed',
      async () => {
        const s = (await (await api(`/v1/sources/${source.id}`)).json()) as { latest_version?: { status: string } };
        assert.equal(s.latest_version?.status, 'ready');
      },
      120_000,
    );
  }

  /** The trace once it holds the spans of both processes down to the model call (they arrive in batches). */
  async function traceFromJaeger(traceId: string, ready: (t: JaegerTrace) => boolean): Promise<JaegerTrace> {
    let trace: JaegerTrace | undefined;
    await waitFor(
      'the run trace in Jaeger',
      async () => {
        const res = await fetch(`${jaeger!.queryUrl}/api/traces/${traceId}`);
        trace = res.ok ? ((await res.json()) as { data: JaegerTrace[] }).data[0] : undefined;
        assert.ok(trace && ready(trace));
      },
      60_000,
    );
    return trace!;
  }

  it('shows a run started over the API as one trace from the HTTP request to the GenAI span, without secrets', async () => {
    await indexedSource('Office pets', 'pets.txt', 'Our office dog is called Biscuit and loves tennis balls.');
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'traced',
      instructions: 'You keep the warehouse informed.',
      sources: ['Office pets'],
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'ask' },
        {
          kind: 'llm',
          id: 'ask',
          instructions: 'Tell the warehouse, look the dog up, then answer.',
          tools: ['http.request'],
        },
      ],
    });
    fake.setHandler((body) => {
      const turn = turnOf(body);
      if (turn === 0)
        return reply([toolUse('http_request', { method: 'POST', url: `${sink.url}/warehouse`, body: { order: 7 } })], {
          usage: { input_tokens: 120, output_tokens: 30 },
        });
      if (turn === 1)
        return reply([toolUse('search_sources', { query: 'name of the office dog' })], {
          usage: { input_tokens: 150, output_tokens: 20 },
        });
      return reply([text('The dog is Biscuit.')], { usage: { input_tokens: 200, output_tokens: 12 } });
    });

    const started = await api(`/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: JSON.stringify([{ question: `${promptMarker}: what is the dog called?` }]) }),
    });
    assert.equal(started.status, 202, await started.clone().text());
    const { id: runId } = (await started.json()) as { id: string };
    let run: { status: string; trace_id: string | null; links: { trace: string | null } } | undefined;
    await waitFor(
      'the run to end',
      async () => {
        run = (await (await api(`/v1/runs/${runId}`)).json()) as typeof run;
        assert.ok(run && ['completed', 'failed'].includes(run.status));
      },
      120_000,
    );
    assert.equal(run!.status, 'completed');
    assert.match(run!.trace_id ?? '', /^[0-9a-f]{32}$/);
    assert.equal(run!.links.trace, `${jaeger!.queryUrl}/trace/${run!.trace_id}`);
    assert.equal(sink.requests.length, 1, 'the tool call reached the warehouse once');

    const byName = (t: JaegerTrace, name: string | RegExp) =>
      t.spans.filter((s) => (typeof name === 'string' ? s.operationName === name : name.test(s.operationName)));
    const trace = await traceFromJaeger(run!.trace_id!, (t) =>
      [`chat ${modelName}`, 'retrieval', 'execute_tool http.request', 'cadre.page', /^RunWorkflow:agentRunV3$/].every(
        (n) => byName(t, n).length > 0,
      ),
    );
    assert.equal(trace.traceID, run!.trace_id, "GET /v1/runs/{id} names the run's trace");
    const service = (s: JaegerSpan) => trace.processes[s.processID].serviceName;
    if (process.env.DEBUG_TRACE)
      for (const s of trace.spans)
        console.log(
          service(s),
          s.spanID,
          s.operationName,
          '←',
          s.references.map((r) => r.spanID).join(','),
          parentOf(trace, s)?.operationName ?? '-',
        );

    // The root: the API request, in the web process.
    const roots = trace.spans.filter((s) => s.references.length === 0);
    assert.equal(roots.length, 1, `one root: ${roots.map((s) => s.operationName).join(', ')}`);
    const [httpSpan] = roots;
    assert.equal(httpSpan.operationName, 'POST /v1/agents/:id/run');
    assert.equal(service(httpSpan), 'cadre-web');
    assert.equal(tag(httpSpan, 'http.response.status_code'), 202);

    // Model calls: GenAI spans in the worker, two-by-two with their parent activity, down from the HTTP span.
    const chats = byName(trace, `chat ${modelName}`);
    assert.equal(chats.length, 3, 'one span per model call');
    for (const chat of chats) {
      assert.equal(service(chat), 'cadre-worker');
      assert.equal(tag(chat, 'gen_ai.system'), 'anthropic');
      assert.equal(tag(chat, 'gen_ai.operation.name'), 'chat');
      assert.equal(tag(chat, 'gen_ai.request.model'), modelName);
      assert.equal(tag(chat, 'cadre.run.id'), runId);
      assert.ok(Number(tag(chat, 'gen_ai.usage.input_tokens')) > 0);
      assert.ok(Number(tag(chat, 'gen_ai.usage.output_tokens')) > 0);
    }
    assert.deepEqual(chats.map((c) => Number(tag(c, 'gen_ai.usage.input_tokens'))).sort(), [120, 150, 200]);
    const chain = ancestry(trace, chats[0]).map((s) => s.operationName);
    assert.equal(
      chain.at(-1),
      httpSpan.operationName,
      `the model call descends from the HTTP request: ${chain.join(' ← ')}`,
    );
    const order = [/^RunActivity:executeStep$/, /^RunWorkflow:/, /^StartWorkflow:agentRunV3$/];
    let at = 0;
    for (const step of order) {
      const found = chain.findIndex((n, i) => i > at && step.test(n));
      assert.ok(found > at, `${step} above the model call, in order: ${chain.join(' ← ')}`);
      at = found;
    }
    const activity = parentOf(trace, chats[0])!;
    assert.equal(activity.operationName, 'RunActivity:executeStep');
    for (const chat of chats) assert.equal(parentOf(trace, chat)?.spanID, activity.spanID, 'model calls of one step');

    // The step's tool call and retrieval, beside its model calls.
    const [toolSpan] = byName(trace, 'execute_tool http.request');
    assert.equal(parentOf(trace, toolSpan)?.spanID, activity.spanID);
    assert.equal(tag(toolSpan, 'gen_ai.tool.name'), 'http.request');
    const [retrieval] = byName(trace, 'retrieval');
    assert.equal(parentOf(trace, retrieval)?.spanID, activity.spanID);
    assert.equal(tag(retrieval, 'cadre.retrieval.passages'), 1);
    // SQL (the pg instrumentation) under the retrieval, in the worker.
    const sql = trace.spans.filter((s) => parentOf(trace, s)?.spanID === retrieval.spanID);
    assert.ok(
      sql.some((s) => [tag(s, 'db.system.name'), tag(s, 'db.system')].includes('postgresql')),
      `SQL spans under the retrieval: ${sql.map((s) => s.operationName).join(', ')}`,
    );

    // A page of items is one span with its counts: the first pass took the run's one item to its model step.
    const pages = byName(trace, 'cadre.page');
    assert.ok(pages.every((p) => tag(p, 'cadre.run.id') === runId));
    assert.ok(
      pages.some((p) => tag(p, 'cadre.page.items') === 1 && tag(p, 'cadre.page.items_waiting') === 1),
      JSON.stringify(pages.map((p) => p.tags)),
    );

    // No secret and no prompt text anywhere: attributes, events, resources.
    const everything = JSON.stringify([trace.spans.map((s) => [s.tags, s.logs]), trace.processes]);
    for (const secret of [apiKey, anthropicKey, promptMarker, 'Biscuit', 'tennis balls', 'warehouse informed']) {
      assert.ok(!everything.includes(secret), `the trace holds ${JSON.stringify(secret)}`);
    }
  });

  it('gives a webhook delivery a trace of its own, which the run it starts joins', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'hooked',
      nodes: [{ kind: 'input', id: 'in', format: 'json' }],
    });
    const created = await api(`/v1/agents/${agent.id}/triggers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'webhook' }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const hook = (await created.json()) as { id: string; secret: string };
    const body = JSON.stringify({ invoice: 'INV-1', note: promptMarker });
    const id = `msg_${randomUUID()}`;
    const ts = String(Math.floor(Date.now() / 1000));
    const mac = createHmac('sha256', Buffer.from(hook.secret.slice('whsec_'.length), 'base64'))
      .update(`${id}.${ts}.${body}`)
      .digest('base64');
    const delivered = await fetch(`${url}/v1/hooks/${hook.id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': ts,
        'webhook-signature': `v1,${mac}`,
      },
      body,
    });
    assert.ok(delivered.status < 300, await delivered.clone().text());
    let run: { id: string; status: string; trace_id: string | null } | undefined;
    await waitFor(
      "the delivery's run to end",
      async () => {
        const list = (await (await api(`/v1/runs?agent_id=${agent.id}`)).json()) as { data: (typeof run)[] };
        run = list.data[0];
        assert.equal(run?.status, 'completed');
      },
      60_000,
    );
    const run0 = (await (await api(`/v1/runs/${run!.id}`)).json()) as { trace_id: string | null };
    assert.match(run0.trace_id ?? '', /^[0-9a-f]{32}$/);
    const trace = await traceFromJaeger(run0.trace_id!, (t) =>
      t.spans.some((s) => /^RunWorkflow:/.test(s.operationName)),
    );
    const roots = trace.spans.filter((s) => s.references.length === 0);
    assert.deepEqual(
      roots.map((s) => s.operationName),
      ['POST /v1/hooks/:id'],
      "the delivery is the root of the run's trace",
    );
    const opener = trace.spans.find((s) => tag(s, 'cadre.run.id') === run!.id && s.processID === roots[0].processID);
    assert.ok(opener, "the delivery's handler span names the run it started");
    assert.ok(!JSON.stringify(trace.spans.map((s) => [s.tags, s.logs])).includes(promptMarker));
    assert.ok(!JSON.stringify(trace.spans.map((s) => [s.tags, s.logs])).includes(hook.secret.slice('whsec_'.length)));
  });

  it("records an item that fails in its step as an event with the error, on that step's span", async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'refused',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'ask' },
        { kind: 'llm', id: 'ask', instructions: 'Answer.' },
      ],
    });
    fake.setHandler(() => apiErrors.invalidRequest('max_tokens is too large for this test'));
    const started = await api(`/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: JSON.stringify([{ question: promptMarker }]) }),
    });
    assert.equal(started.status, 202, await started.clone().text());
    const { id: runId } = (await started.json()) as { id: string };
    let run: { status: string; trace_id: string | null; counts: { failed: number } } | undefined;
    await waitFor(
      'the run to end',
      async () => {
        run = (await (await api(`/v1/runs/${runId}`)).json()) as typeof run;
        assert.ok(run && !['running', 'needs_review'].includes(run.status));
      },
      120_000,
    );
    assert.equal(run!.counts.failed, 1);
    const failedEvent = (s: JaegerSpan) =>
      s.logs.find((l) => l.fields.some((f) => f.key === 'event' && f.value === 'item failed'));
    const trace = await traceFromJaeger(run!.trace_id!, (t) => t.spans.some(failedEvent));
    const step = trace.spans.find(failedEvent)!;
    assert.equal(step.operationName, 'RunActivity:executeStep');
    const fields = Object.fromEntries(failedEvent(step)!.fields.map((f) => [f.key, f.value]));
    assert.equal(fields['cadre.item.seq'], 0);
    assert.match(String(fields['error.message']), /refused the request \(400\): max_tokens is too large/);
    assert.ok(!JSON.stringify(trace.spans.map((s) => [s.tags, s.logs])).includes(promptMarker));
  });
});
