// `npm run bench:engine`: Cadre's run engine against raw Temporal on the same dev server, in one process run.
// Prints figures (never asserted); the last line is one JSON object.
import { randomUUID } from 'node:crypto';
import { Worker, NativeConnection } from '@temporalio/worker';
import { createHarness, createLiveAgent, createTestWorkspace, startTestRun, waitForRun } from '../test/support/harness';
import { mochaGlobalTeardown } from '../test/support/global';
import { pageWorkflowId } from '../workflows/contracts';
import { reply, startFakeAnthropic, text } from '../test/fakes/anthropic';

const items = Number(process.env.BENCH_ITEMS ?? 10_000);
const llmItems = Number(process.env.BENCH_LLM_ITEMS ?? 1_000);
const llmDelayMs = 1_000;
const llmConcurrency = 50;

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);

async function historyStats(client: import('@temporalio/client').Client, workflowIds: string[]) {
  let maxEvents = 0;
  let maxBytes = 0;
  for (const id of workflowIds) {
    const d = await client.workflow.getHandle(id).describe();
    maxEvents = Math.max(maxEvents, d.historyLength);
    maxBytes = Math.max(maxBytes, Number(d.raw.workflowExecutionInfo?.historySizeBytes ?? 0));
  }
  return { maxEvents, maxBytes };
}

async function main() {
  const fake = await startFakeAnthropic();
  const h = await createHarness({
    config: { model: { apiKey: 'bench', baseUrl: fake.url, name: 'claude-sonnet-4-6' } } as never,
  });
  const ws = (await createTestWorkspace(h)).workspace.id;

  // Cadre: input → transform → state increment, every item durably recorded.
  const agent = await createLiveAgent(h, ws, {
    name: 'bench',
    nodes: [
      { kind: 'input', id: 'in', format: 'lines', next: 'tidy' },
      { kind: 'transform', id: 'tidy', set: { n: '{{text}}' }, cast: { n: 'number' }, next: 'count' },
      { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'seen' }, save_as: 'seen' },
    ],
  });
  const input = Array.from({ length: items }, (_, i) => `item ${i}`.replace('item ', '')).join('\n');
  const t0 = performance.now();
  const run = await startTestRun(h, ws, agent.id, input);
  await waitForRun(h, run.id, undefined, 600_000);
  const cadreSeconds = (performance.now() - t0) / 1000;
  const counter = (await h.stack.knex('agent_state').where({ agent_id: agent.id, key: 'seen' }).first()).value;
  const pages = Math.ceil(items / 1000);
  const runWorkflow = `run-${run.id}`;
  const history = await historyStats(h.client, [
    runWorkflow,
    ...Array.from({ length: pages }, (_, p) => pageWorkflowId(runWorkflow, p)),
  ]);
  console.log(
    `cadre: ${items} items in ${cadreSeconds.toFixed(2)} s (${(items / cadreSeconds).toFixed(0)} items/s), counter ${counter}`,
  );
  console.log(`largest history: ${history.maxEvents} events, ${history.maxBytes} bytes`);

  // Raw Temporal: the same number of trivial activities, same paging, same server.
  const taskQueue = `baseline-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: h.temporalConfig.address });
  const baselineWorker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: require.resolve('./baseline-workflows'),
    activities: { trivial: async (n: number) => n },
    maxConcurrentActivityTaskExecutions: 100,
  });
  const baselineSeconds = await baselineWorker.runUntil(async () => {
    const start = performance.now();
    await h.client.workflow.execute('baselineRun', {
      taskQueue,
      workflowId: `baseline-${randomUUID()}`,
      args: [items, 1000],
    });
    return (performance.now() - start) / 1000;
  });
  await connection.close();
  console.log(
    `raw Temporal: ${items} trivial activities in ${baselineSeconds.toFixed(2)} s (${(items / baselineSeconds).toFixed(0)} /s)`,
  );

  // Model steps: a fake Anthropic server answering after 1 s, 50 at a time.
  // When model calls begin and end, to tell the run's fixed costs (input, first page, files) from per-item ones.
  const calls: number[] = [];
  fake.setHandler(() => {
    calls.push(performance.now());
    return { ...reply([text('ok')]), delayMs: llmDelayMs };
  });
  const llmAgent = await createLiveAgent(h, ws, {
    name: 'bench-llm',
    nodes: [
      { kind: 'input', id: 'in', format: 'lines', next: 'ask' },
      { kind: 'llm', id: 'ask', instructions: 'Acknowledge the item.' },
    ],
    policy: { concurrency: llmConcurrency },
  });
  const start = performance.now();
  const llmRun = await startTestRun(
    h,
    ws,
    llmAgent.id,
    Array.from({ length: llmItems }, (_, i) => `line ${i}`).join('\n'),
  );
  const finished = await waitForRun(h, llmRun.id, undefined, 600_000);
  const llmWall = (performance.now() - start) / 1000;
  const firstCall = (Math.min(...calls) - start) / 1000;
  const callsSpan = (Math.max(...calls) - Math.min(...calls)) / 1000 + llmDelayMs / 1000;
  console.log(
    `llm: ${llmItems} items, ${finished.done} done, ${finished.failed} failed, in ${llmWall.toFixed(1)} s (ideal ${(llmItems / llmConcurrency) * (llmDelayMs / 1000)} s); first model call after ${firstCall.toFixed(2)} s, model calls spanning ${callsSpan.toFixed(1)} s`,
  );

  clearInterval(sampler);
  await h.close();
  await fake.close();
  await mochaGlobalTeardown();
  const result = {
    items,
    items_per_s: Math.round(items / cadreSeconds),
    cadre_s: Number(cadreSeconds.toFixed(2)),
    baseline_items_per_s: Math.round(items / baselineSeconds),
    baseline_s: Number(baselineSeconds.toFixed(2)),
    ratio: Number((baselineSeconds / cadreSeconds).toFixed(2)),
    counter,
    llm_items: llmItems,
    llm_wall_s: Number(llmWall.toFixed(1)),
    llm_ideal_s: (llmItems / llmConcurrency) * (llmDelayMs / 1000),
    llm_first_call_s: Number(firstCall.toFixed(2)),
    llm_calls_span_s: Number(callsSpan.toFixed(1)),
    max_history_events: history.maxEvents,
    max_history_bytes: history.maxBytes,
    peak_worker_rss_mb: Math.round(peakRss / 2 ** 20),
  };
  console.log(JSON.stringify(result));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
