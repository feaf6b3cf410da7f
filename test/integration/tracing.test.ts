// Traces end to end against a real Jaeger (v1.76.0, built once by scripts/observability-tools.sh): the web and the
// worker run as processes of their own with OTLP pointed at Jaeger, a run is started over the API whose model step
// calls a tool and searches a source (the local Anthropic-compatible server answers), and Jaeger's query API must
// show one trace from the HTTP request to the GenAI span, parents right, attributes present, no secret or prompt.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createHarness, createLiveAgent, createTestWorkspace, spawnWorker, type Harness } from '../support/harness';
import { freePort } from '../support/ports';
import { startHttpSink, type HttpSink } from '../support/sinks';
import { apiErrors, reply, startFakeAnthropic, text, toolUse, turnOf, type FakeAnthropic } from '../fakes/anthropic';
import { waitFor } from '../../scripts/supervisor';
import { connectorApi, pollNow } from '../support/connections';
import { runWorkflowId } from '../../model/run-identity';
import { signWebhook } from '../../services/triggers/webhook-signature';
import { startPostgresServer } from '../support/servers';
import {
  ancestry,
  jaegerBin,
  parentOf,
  rootsOf,
  startJaeger,
  stopChild as stop,
  tag,
  type Jaeger,
  type JaegerSpan,
  type JaegerTrace,
} from '../support/jaeger';

const root = path.resolve(__dirname, '../..');

describe('tracing (OpenTelemetry → real Jaeger)', function () {
  this.timeout(300_000);
  const modelName = 'claude-trace-test';
  const anthropicKey = 'sk-ant-test-SECRET-0f3b9c';
  const promptMarker = 'PROMPT-TEXT-7d1e';
  let jaeger: Jaeger | undefined;
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
    await jaeger?.stop();
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

  const traceFromJaeger = (traceId: string, ready: (t: JaegerTrace) => boolean) => jaeger!.trace(traceId, ready);

  /** A webhook trigger's delivery, signed; `headers` are the sender's own (a traceparent, say). */
  const deliver = (hook: { id: string; secret: string }, data: unknown, headers: Record<string, string> = {}) => {
    const body = JSON.stringify(data);
    const id = `msg_${randomUUID()}`;
    const ts = Math.floor(Date.now() / 1000);
    return fetch(`${url}/v1/hooks/${hook.id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': signWebhook(hook.secret, id, ts, body),
        ...headers,
      },
      body,
    });
  };

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
        // A message of its own: without one, assert.ok parses this file to word it, at every poll.
        assert.ok(run && ['completed', 'failed'].includes(run.status), `the run is ${run?.status}`);
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
    const delivered = await deliver(hook, { invoice: 'INV-1', note: promptMarker });
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
    const [delivery] = rootsOf(trace);
    assert.deepEqual(
      rootsOf(trace).map((s) => s.operationName),
      ['webhook delivery'],
      "the delivery is the root of the run's trace",
    );
    assert.equal(tag(delivery, 'span.kind'), 'consumer');
    assert.equal(tag(delivery, 'cadre.run.id'), run!.id, 'the delivery span names the run it started');
    assert.equal(tag(delivery, 'cadre.trigger.id'), hook.id);
    // Linked to the HTTP request that carried it, a trace of its own.
    const link = delivery.references.find((r) => r.refType === 'FOLLOWS_FROM');
    assert.ok(link && link.traceID !== trace.traceID, JSON.stringify(delivery.references));
    const request = await traceFromJaeger(link.traceID, (t) => t.spans.some((s) => s.spanID === link.spanID));
    assert.deepEqual(
      rootsOf(request).map((s) => s.operationName),
      ['POST /v1/hooks/:id'],
    );
    assert.ok(!JSON.stringify(trace.spans.map((s) => [s.tags, s.logs])).includes(promptMarker));
    assert.ok(!JSON.stringify(trace.spans.map((s) => [s.tags, s.logs])).includes(hook.secret.slice('whsec_'.length)));
  });

  /** The run's trace once its workflow's spans are in, checked to hold the run and its trace id as the API gives it. */
  async function runTrace(runId: string) {
    const run = (await (await api(`/v1/runs/${runId}`)).json()) as { trace_id: string | null };
    assert.match(run.trace_id ?? '', /^[0-9a-f]{32}$/, 'GET /v1/runs/{id} names the trace');
    return traceFromJaeger(run.trace_id!, (t) => runSpanOf(t, runId) !== undefined);
  }
  /** The run's own workflow's span. */
  const runSpanOf = (t: JaegerTrace, runId: string) =>
    t.spans.find(
      (s) =>
        /^RunWorkflow:agentRun/.test(s.operationName) &&
        [tag(s, 'workflowId'), tag(s, 'temporalWorkflowId')].includes(runWorkflowId(runId)),
    );
  /** The agent's runs of this trigger kind, once `n` have ended. */
  async function endedRuns(agentId: string, n: number) {
    let runs: { id: string; status: string; trigger: string }[] = [];
    await waitFor(
      'the triggered runs to end',
      async () => {
        runs = ((await (await api(`/v1/runs?agent_id=${agentId}`)).json()) as { data: typeof runs }).data;
        assert.equal(runs.filter((r) => r.status === 'completed').length, n);
      },
      120_000,
    );
    return runs;
  }

  it('gives a schedule fire a trace of its own, rooted at the fire, which its run joins', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'scheduled',
      nodes: [{ kind: 'input', id: 'in', format: 'json' }],
    });
    const created = await api(`/v1/agents/${agent.id}/triggers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'schedule', schedule: { type: 'cron', expression: '0 3 1 1 *' } }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const trigger = (await created.json()) as { id: string };
    // "Run now": Temporal's trigger of the schedule, which fires it as its spec would.
    assert.equal((await api(`/v1/triggers/${trigger.id}/fire`, { method: 'POST' })).status, 202);
    const [run] = await endedRuns(agent.id, 1);
    assert.equal(run.trigger, 'schedule');
    const { traceID } = await runTrace(run.id);
    // The fire's workflow span ends (and is exported) when the run it waits for has ended.
    const trace = await traceFromJaeger(traceID, (t) =>
      t.spans.some((s) => s.operationName === 'RunWorkflow:scheduledRun'),
    );
    // The fire's workflow is the root of the run's trace: the schedule, not the request that fired it by hand. (Each
    // of its workflow tasks is a RunWorkflow span of its own; a busy worker may take more than one.)
    const roots = rootsOf(trace);
    assert.deepEqual([...new Set(roots.map((s) => s.operationName))], ['RunWorkflow:scheduledRun']);
    const chain = ancestry(trace, runSpanOf(trace, run.id)!);
    const fire = chain.at(-1)!;
    assert.equal(fire.operationName, 'RunWorkflow:scheduledRun', chain.map((s) => s.operationName).join(' ← '));
    assert.ok(
      trace.spans.every((s) => trace.processes[s.processID].serviceName === 'cadre-worker'),
      'no span of the web process (the fire request) in the fire trace',
    );
    const opener = trace.spans.find((s) => s.operationName === 'RunActivity:openScheduledRun')!;
    assert.equal(tag(opener, 'cadre.trigger.id'), trigger.id);
    assert.equal(tag(opener, 'cadre.run.id'), run.id);
    const openerRoot = ancestry(trace, opener).at(-1);
    assert.ok(
      roots.some((r) => r.spanID === openerRoot?.spanID),
      'the fire opened the run',
    );
  });

  it('gives an event poll a trace of its own, rooted at the poll, which the runs it starts join', async () => {
    const db = await startPostgresServer();
    try {
      await db.admin.schema.createTable('orders', (t) => {
        t.increments('id');
        t.string('customer').notNullable();
      });
      await db.admin.raw('grant all on orders, orders_id_seq to app');
      const c = connectorApi(h, url, apiKey, workspaceId);
      await c.connect(
        'shop',
        'postgres',
        { host: db.host, port: db.port, database: db.database, user: db.user },
        { password: db.password },
      );
      const agent = await createLiveAgent(h, workspaceId, {
        name: 'on orders',
        nodes: [{ kind: 'input', id: 'in', format: 'json' }],
      });
      const made = await c.call('POST', `/agents/${agent.id}/triggers`, {
        kind: 'event',
        connection: 'shop',
        event: 'row.created',
        options: { table: 'orders', column: 'id' },
        poll_interval_seconds: 3600, // polled by hand below: the schedule's fire, now
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.match(String(await pollNow(h, made.body)), /0 events/, 'the first poll marks where it starts');
      await db.admin('orders').insert([{ customer: promptMarker }, { customer: 'globex' }]);
      assert.match(String(await pollNow(h, made.body)), /2 events, 2 runs started/);
      const runs = await endedRuns(agent.id, 2);
      const [first, second] = await Promise.all(runs.map((r) => runTrace(r.id)));
      assert.equal(first.traceID, second.traceID, "one poll's runs share its trace");
      const trace = await traceFromJaeger(
        first.traceID,
        (t) => runs.every((r) => runSpanOf(t, r.id)) && t.spans.some((s) => s.operationName === 'event poll'),
      );
      // Each workflow task of the poll's workflow is a RunWorkflow span (a busy worker may take several), and each is
      // a root: every root of the trace is one of them, and the poll and its runs descend from one.
      const roots = rootsOf(trace);
      assert.deepEqual([...new Set(roots.map((s) => s.operationName))], ['RunWorkflow:eventPoll']);
      const isRoot = (span: JaegerSpan | undefined) => roots.some((r) => r.spanID === span?.spanID);
      const [poll] = trace.spans.filter((s) => s.operationName === 'event poll');
      assert.equal(tag(poll, 'span.kind'), 'consumer');
      assert.equal(tag(poll, 'cadre.trigger.id'), made.body.id);
      assert.equal(tag(poll, 'cadre.poll.events'), 2);
      assert.equal(tag(poll, 'cadre.poll.runs'), 2);
      assert.ok(isRoot(ancestry(trace, poll).at(-1)), 'the poll span descends from the poll workflow');
      for (const r of runs)
        assert.ok(isRoot(ancestry(trace, runSpanOf(trace, r.id)!).at(-1)), 'each run descends from the poll');
      assert.ok(!JSON.stringify(trace.spans.map((s) => [s.tags, s.logs])).includes(promptMarker), 'no event data');
    } finally {
      await db.stop();
    }
  });

  it("gives a batching trigger's window a trace of its own, linked to its first delivery, which the batch's run joins", async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'batched',
      nodes: [{ kind: 'input', id: 'in', format: 'json' }],
    });
    // Closed by its second delivery (full), not by the window's end: the test waits for nothing but the run.
    const created = await api(`/v1/agents/${agent.id}/triggers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'webhook', batch: { max_wait_ms: 600_000, max_items: 2 } }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const hook = (await created.json()) as { id: string; secret: string };
    // Each sender's request is in a trace of the sender's own (its traceparent): the window links to the first's.
    const senderTraces = [randomBytes(16).toString('hex'), randomBytes(16).toString('hex')];
    for (const [i, traceId] of senderTraces.entries()) {
      const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
      const res = await deliver(hook, { invoice: `INV-${i}`, note: promptMarker }, { traceparent });
      const body = (await res.json()) as { status: string };
      assert.equal(res.status, 202, JSON.stringify(body));
      assert.equal(body.status, 'accepted', 'the delivery joins the batch');
    }
    const [run] = await endedRuns(agent.id, 1);
    assert.equal(run.trigger, 'webhook');
    const trace = await runTrace(run.id);
    assert.ok(!senderTraces.includes(trace.traceID), "the batch's trace is not a sender's");

    // The window is the trace's one root, a consumer span naming its trigger and batch.
    assert.deepEqual(
      rootsOf(trace).map((s) => s.operationName),
      ['delivery batch'],
      "the window is the root of the batch run's trace",
    );
    const [window] = rootsOf(trace);
    assert.equal(tag(window, 'span.kind'), 'consumer');
    assert.equal(tag(window, 'cadre.trigger.id'), hook.id);
    assert.match(String(tag(window, 'cadre.batch.id')), /^[0-9a-f-]{36}$/);
    assert.equal(trace.processes[window.processID].serviceName, 'cadre-web');
    // Linked to the request of the delivery that opened the window, in the first sender's trace.
    const links = window.references.filter((r) => r.refType === 'FOLLOWS_FROM');
    assert.deepEqual(
      links.map((r) => r.traceID),
      [senderTraces[0]],
      JSON.stringify(window.references),
    );
    const request = await traceFromJaeger(senderTraces[0], (t) => t.spans.some((s) => s.spanID === links[0].spanID));
    const linked = request.spans.find((s) => s.spanID === links[0].spanID)!;
    assert.equal(ancestry(request, linked).at(-1)?.operationName, 'POST /v1/hooks/:id');

    // The batch's run descends from the window, through the window's workflow that closed the batch and opened it.
    const chain = ancestry(trace, runSpanOf(trace, run.id)!).map((s) => s.operationName);
    assert.equal(chain.at(-1), 'delivery batch', chain.join(' ← '));
    assert.ok(chain.includes('RunWorkflow:deliveryBatch'), chain.join(' ← '));
    const opener = trace.spans.find((s) => s.operationName === 'RunActivity:openBatchRun');
    assert.ok(opener, 'the batch run was opened in the trace');
    assert.equal(ancestry(trace, opener).at(-1)?.spanID, window.spanID);
    assert.ok(!JSON.stringify(trace.spans.map((s) => [s.tags, s.logs])).includes(promptMarker), 'no delivery data');
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
        assert.ok(run && !['running', 'needs_review'].includes(run.status), `the run is ${run?.status}`);
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
