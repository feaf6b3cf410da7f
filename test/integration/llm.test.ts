// Model steps end to end: the real @anthropic-ai/sdk talking over HTTP to the local Anthropic-compatible server
// (test/fakes/anthropic.ts), inside runs on the real Temporal dev server and the embedded Postgres.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { freePort } from '../support/ports';
import { decideUpdate } from '../../workflows/contracts';
import { runWorkflowId } from '../../model/run-identity';
import { startHttpSink, type HttpSink } from '../support/sinks';
import {
  apiErrors,
  itemOf,
  reply,
  startFakeAnthropic,
  text,
  toolResultsOf,
  toolUse,
  turnOf,
  type FakeAnthropic,
  type MessagesRequest,
  type RecordedRequest,
} from '../fakes/anthropic';

// Not claude-sonnet-4-5: SDK 1.12 prints a deprecation warning (end of life November 30th, 2026) on every request.
const modelName = 'claude-sonnet-4-6';
const colors = ['teal', 'ochre', 'crimson', 'ivory', 'slate'];

/** What the item says, and therefore what a correct extraction answers. */
const orderMessage = (order: number) => ({
  id: `m-${order}`,
  text: `Hi! Order #${order}: ${(order % 7) + 1} tins of ${colors[order % 5]} paint, please.`,
});
const expectedOrder = (order: number) => ({ order, quantity: (order % 7) + 1, color: colors[order % 5] });

/** The fake model's reading of an item, derived only from what the SDK sent. */
function extract(body: MessagesRequest) {
  const m = /Order #(\d+): (\d+) tins of (\w+) paint/.exec(String(itemOf(body).text));
  if (!m) throw new Error('the request does not carry the item');
  return { order: Number(m[1]), quantity: Number(m[2]), color: m[3] };
}

const orderSchema = {
  type: 'object',
  properties: {
    order: { type: 'integer' },
    quantity: { type: 'integer', minimum: 1 },
    color: { type: 'string', enum: colors },
  },
  required: ['order', 'quantity', 'color'],
  additionalProperties: false,
};

const extractAgent = (name: string, policy: Record<string, unknown> = {}) => ({
  name,
  instructions: 'You read customer messages for a paint shop.',
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'extract' },
    {
      kind: 'llm',
      id: 'extract',
      instructions: 'Extract the order number, the quantity and the colour.',
      output_schema: orderSchema,
    },
  ],
  policy,
});

/** The API key the SDK sent (SDK 1.x sends it as a bearer token; older ones as x-api-key). */
const apiKeyOf = (r: RecordedRequest) =>
  (r.headers['x-api-key'] as string | undefined) ?? String(r.headers.authorization).replace(/^Bearer /, '');

const submitted = (body: MessagesRequest) =>
  reply([toolUse('submit_output', extract(body))], { usage: { input_tokens: 100, output_tokens: 20 } });

describe('llm steps', () => {
  let fake: FakeAnthropic;
  let sink: HttpSink;
  let h: Harness;
  let ws: string;

  before(async () => {
    fake = await startFakeAnthropic();
    sink = await startHttpSink();
    h = await createHarness({
      config: {
        // No extra attempts for an unavailable model here: these tests count each request (one test below
        // gives it some).
        model: { apiKey: 'test-key', baseUrl: fake.url, name: modelName, unavailableRetries: 0, retrySeconds: 0.1 },
        http: { allowHosts: ['127.0.0.1'] },
      } as never,
    });
    ws = (await createTestWorkspace(h)).workspace.id;
  });
  after(async () => {
    await h?.close();
    await fake?.close();
    await sink?.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.setHandler(() => apiErrors.internal('no handler set for this test'));
    sink.requests.length = 0;
  });

  async function run(spec: unknown, input: unknown[], harness = h, workspace = ws) {
    const agent = await createLiveAgent(harness, workspace, spec);
    const started = await startTestRun(harness, workspace, agent.id, JSON.stringify(input));
    const done = await waitForRun(harness, started.id);
    return { agent, run: done, rows: await items(harness, started.id) };
  }

  it('extracts 50 items with an output schema, stores reasoning and usage per item, and sums usage on the run', async () => {
    fake.setHandler((body, index) => {
      const answer = extract(body);
      return reply(
        [text(`Order ${answer.order}: ${answer.quantity} × ${answer.color}.`), toolUse('submit_output', answer)],
        {
          // the first request writes the prompt cache, the rest read it
          usage: {
            input_tokens: 100,
            output_tokens: 20,
            ...(index === 0 ? { cache_creation_input_tokens: 400 } : { cache_read_input_tokens: 400 }),
          },
        },
      );
    });
    const spec = extractAgent('extract orders');
    spec.nodes[1] = { ...spec.nodes[1], next: 'record' } as never;
    spec.nodes.push({
      kind: 'tool',
      id: 'record',
      tool: 'state.append',
      arguments: { key: 'orders', value: { order: '{{order}}', quantity: '{{quantity}}', color: '{{color}}' } },
      save_as: 'orders_so_far',
    } as never);
    const orders = Array.from({ length: 50 }, (_, i) => i + 1);
    const { agent, run: done, rows } = await run(spec, orders.map(orderMessage));

    assert.equal(done.status, 'completed');
    assert.deepEqual([done.total, done.done, done.failed], [50, 50, 0]);
    for (const [i, row] of rows.entries()) {
      const want = expectedOrder(orders[i]);
      assert.equal(row.status, 'done');
      const { orders_so_far: recorded, ...data } = row.data;
      assert.deepEqual(data, { ...orderMessage(orders[i]), ...want });
      assert.deepEqual(recorded.at(-1), want); // what the state.append after the model step saw
      assert.deepEqual(row.reasoning, [
        { node: 'extract', type: 'text', text: `Order ${want.order}: ${want.quantity} × ${want.color}.` },
        { node: 'extract', type: 'tool_call', tool: 'submit_output', input: want },
      ]);
      // each item paid for its own turn; exactly one wrote the cache
      assert.equal(row.usage.output_tokens, 20);
      assert.equal(row.usage.input_tokens + row.usage.cache_read_tokens, 500);
      assert.ok(row.usage.cost_usd > 0);
    }
    assert.equal(rows.filter((r) => r.usage.cache_read_tokens === 0).length, 1);

    // the run's usage is the sum of its items' (Sonnet: $3 / $15 per million, cache reads a tenth of input)
    assert.deepEqual(
      {
        input: Number(done.usage.input_tokens),
        output: Number(done.usage.output_tokens),
        cacheRead: Number(done.usage.cache_read_tokens),
      },
      { input: 50 * 100 + 400, output: 50 * 20, cacheRead: 49 * 400 },
    );
    const itemCost = rows.reduce((sum, r) => sum + r.usage.cost_usd, 0);
    assert.ok(Math.abs(Number(done.usage.cost_usd) - itemCost) < 1e-9, `${done.usage.cost_usd} ≠ ${itemCost}`);
    assert.ok(Math.abs(Number(done.usage.cost_usd) - (5400 * 3 + 19600 * 0.3 + 1000 * 15) / 1e6) < 1e-9);

    // the tool after the model step saw every extracted answer
    const state = await h.stack.knex('agent_state').where({ agent_id: agent.id, key: 'orders' }).first();
    assert.deepEqual(
      [...state.value].sort((a, b) => a.order - b.order),
      orders.map(expectedOrder),
    );

    // what the SDK actually sent: one request per item, one cacheable system prompt shared by all of them
    assert.equal(fake.requests.length, 50);
    const [first] = fake.requests;
    assert.equal(first.path, '/v1/messages');
    assert.equal(apiKeyOf(first), 'test-key');
    assert.ok(first.headers['anthropic-version']);
    assert.equal(first.body.model, modelName);
    const system = first.body.system as { type: string; text: string; cache_control?: unknown }[];
    assert.equal(system.length, 1);
    assert.deepEqual(system[0].cache_control, { type: 'ephemeral' });
    assert.match(system[0].text, /You read customer messages for a paint shop\./);
    assert.match(system[0].text, /Extract the order number, the quantity and the colour\./);
    assert.equal(new Set(fake.requests.map((r) => JSON.stringify([r.body.system, r.body.tools]))).size, 1);
    assert.deepEqual(
      first.body.tools!.map((t) => [t.name, t.input_schema]),
      [['submit_output', orderSchema]],
    );
    assert.deepEqual(
      fake.requests.map((r) => extract(r.body).order).sort((a, b) => a - b),
      orders,
    );
    assert.ok(fake.requests.every((r) => r.body.messages.length === 1 && r.body.messages[0].role === 'user'));
  });

  it("never has more model calls in flight than the agent's concurrency", async () => {
    fake.setHandler((body) => ({ ...submitted(body), delayMs: 50 })); // lets the steps overlap
    const { run: done } = await run(
      extractAgent('capped', { concurrency: 3 }),
      Array.from({ length: 20 }, (_, i) => orderMessage(i + 1)),
    );
    assert.equal(done.status, 'completed');
    assert.equal(fake.requests.length, 20);
    assert.ok(fake.maxInFlight <= 3, `at most 3 model calls at once (saw ${fake.maxInFlight})`);
  });

  describe('agent tools', () => {
    const notifyAgent = (policy: Record<string, unknown> = {}) => ({
      name: 'notify',
      instructions: 'You keep the warehouse informed.',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'notify' },
        {
          kind: 'llm',
          id: 'notify',
          instructions: 'Tell the warehouse about the order, then report the status code it answered.',
          tools: ['http.request'],
          output_schema: { type: 'object', properties: { status: { type: 'integer' } }, required: ['status'] },
        },
      ],
      policy,
    });
    const callWarehouse = (body: MessagesRequest, id?: string) =>
      reply([
        text('Posting the order to the warehouse.'),
        toolUse(
          'http_request',
          { method: 'POST', url: `${sink.url}/warehouse`, body: { order: extract(body).order } },
          id,
        ),
      ]);
    const reportStatus = (body: MessagesRequest) => {
      const [result] = toolResultsOf(body);
      const status = result && !result.is_error ? JSON.parse(String(result.content)).status : -1;
      return reply([toolUse('submit_output', { status })]);
    };

    it('calls an agent tool before submitting: the tool result goes back to the model and the call happens once', async () => {
      fake.setHandler((body) => (turnOf(body) === 0 ? callWarehouse(body, 'toolu_warehouse_1') : reportStatus(body)));
      const { run: done, rows } = await run(notifyAgent(), [orderMessage(7)]);

      assert.equal(done.status, 'completed');
      assert.equal(rows[0].status, 'done');
      assert.equal(rows[0].data.status, 200);
      assert.equal(sink.requests.length, 1);
      assert.deepEqual(sink.requests[0].body, { order: 7 });
      assert.ok(
        sink.requests[0].idempotencyKey?.startsWith(`${done.id}:0:notify:http.request:`),
        sink.requests[0].idempotencyKey,
      );

      assert.equal(fake.requests.length, 2);
      assert.deepEqual(
        fake.requests[0].body.tools!.map((t) => t.name),
        ['http_request', 'submit_output'],
      );
      const httpSchema = fake.requests[0].body.tools![0].input_schema as {
        type: string;
        properties: Record<string, unknown>;
      };
      assert.equal(httpSchema.type, 'object');
      assert.ok('url' in httpSchema.properties && 'method' in httpSchema.properties);
      const second = fake.requests[1].body.messages;
      assert.deepEqual(
        second.map((m) => m.role),
        ['user', 'assistant', 'user'],
      );
      const [result] = toolResultsOf(fake.requests[1].body);
      assert.equal(result.tool_use_id, 'toolu_warehouse_1');
      assert.equal(result.is_error, false);
      assert.deepEqual(JSON.parse(String(result.content)), { status: 200, body: { received: 1 } });

      assert.deepEqual(
        rows[0].reasoning.map((r: { type: string; tool?: string }) => [r.type, r.tool]),
        [
          ['text', undefined],
          ['tool_call', 'http_request'],
          ['tool_result', 'http_request'],
          ['tool_call', 'submit_output'],
        ],
      );
    });

    it('does not repeat a tool call when the activity is retried after the model became unavailable', async () => {
      let followUps = 0;
      fake.setHandler((body) => {
        if (turnOf(body) === 0) return callWarehouse(body); // a fresh tool_use id on every attempt, like the API
        return ++followUps <= 3 ? apiErrors.overloaded() : reportStatus(body); // the SDK gives up after 3 tries
      });
      const { run: done, rows } = await run(notifyAgent({ error_policy: { retries: 1 } }), [orderMessage(8)]);

      assert.equal(done.status, 'completed');
      assert.equal(rows[0].status, 'done');
      assert.equal(rows[0].data.status, 200); // the recorded result of the first call
      assert.equal(fake.requests.length, 6); // attempt 1: call + 3 × 529; attempt 2: call + answer
      assert.equal(sink.requests.length, 1);
    });

    it('tells the model when a tool call fails, so it can answer anyway', async () => {
      fake.setHandler((body) =>
        turnOf(body) === 0
          ? reply([toolUse('http_request', { method: 'GET', url: 'http://169.254.169.254/latest/meta-data' })])
          : reportStatus(body),
      );
      const { rows } = await run(notifyAgent(), [orderMessage(9)]);
      assert.equal(rows[0].status, 'done');
      assert.equal(rows[0].data.status, -1);
      const [result] = toolResultsOf(fake.requests[1].body);
      assert.equal(result.is_error, true);
      assert.match(String(result.content), /169\.254\.169\.254/);
      assert.equal(sink.requests.length, 0);
    });

    describe('approval of the calls the model asks for', () => {
      // Orders above 100 need a reviewer before the warehouse hears of them.
      const reviewed = (extra: Record<string, unknown> = {}) =>
        notifyAgent({
          approvals: { 'http.request': { mode: 'when', when: { field: 'body.order', op: 'gt', value: 100 } } },
          ...extra,
        });
      const costly = { usage: { input_tokens: 100, output_tokens: 10 } };
      const start = async (spec: unknown, input: unknown[]) => {
        const agent = await createLiveAgent(h, ws, spec);
        return startTestRun(h, ws, agent.id, JSON.stringify(input));
      };
      async function pendingApprovals(runId: string, count: number) {
        for (;;) {
          const rows = await h.stack
            .knex('approvals')
            .where({ run_id: runId, status: 'pending' })
            .orderBy(['item_seq', 'call_id']);
          if (rows.length >= count) return rows;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const decide = (approval: { id: string; workflow_id: string }, d: Record<string, unknown>) =>
        h.client.workflow
          .getHandle(approval.workflow_id)
          .executeUpdate(decideUpdate, { args: [{ approvalId: approval.id, by: 'reviewer@test', ...d } as never] });
      const requestsFor = (order: number) => fake.requests.filter((r) => extract(r.body).order === order);

      it('waits in needs_review with the call and its arguments; approve → it runs once and the model goes on with its result', async () => {
        fake.setHandler((body) =>
          turnOf(body) === 0
            ? { ...callWarehouse(body, `toolu_order_${extract(body).order}`), ...costly }
            : { ...reportStatus(body), ...costly },
        );
        // One slot: the waiting item must not hold it, or the other would never run.
        const started = await start(reviewed({ concurrency: 1 }), [orderMessage(700), orderMessage(7)]);

        const [approval] = await pendingApprovals(started.id, 1);
        assert.equal(approval.item_seq, 0);
        assert.equal(approval.node_id, 'notify');
        assert.equal(approval.tool, 'http.request');
        assert.deepEqual(approval.arguments, {
          method: 'POST',
          url: `${sink.url}/warehouse`,
          headers: {},
          body: { order: 700 },
        });
        assert.match(approval.message, /The model asks to call http\.request/);
        // The small order went through without anyone; the large one waits, and the run says so.
        const waiting = await waitForRun(h, started.id, (r) => r.done === 1 && r.status === 'needs_review');
        assert.equal(waiting.needs_review, 1);
        const [held] = await items(h, started.id);
        assert.equal(held.status, 'needs_review');
        assert.deepEqual(
          held.reasoning.map((r: { type: string }) => r.type),
          ['text', 'tool_call'],
          'the reviewer sees why the model asks',
        );
        assert.deepEqual(
          sink.requests.map((r) => r.body),
          [{ order: 7 }],
        );
        assert.equal(requestsFor(700).length, 1);

        await decide(approval, { approve: true });
        const done = await waitForRun(h, started.id);
        assert.equal(done.status, 'completed');
        const rows = await items(h, started.id);
        assert.deepEqual(
          rows.map((r) => [r.status, r.data.status]),
          [
            ['done', 200],
            ['done', 200],
          ],
        );
        assert.deepEqual(
          sink.requests.map((r) => r.body),
          [{ order: 7 }, { order: 700 }],
        );
        assert.ok(sink.requests[1].idempotencyKey?.startsWith(`${started.id}:0:notify:http.request:`));

        // The model picked up where it stopped: the same conversation, answered with the real result.
        const resumed = requestsFor(700);
        assert.equal(resumed.length, 2);
        assert.deepEqual(
          resumed[1].body.messages.map((m) => m.role),
          ['user', 'assistant', 'user'],
        );
        assert.deepEqual(resumed[1].body.messages[0], resumed[0].body.messages[0]);
        const asked = resumed[1].body.messages[1].content as { type: string; id?: string }[];
        assert.deepEqual(
          asked.map((b) => [b.type, b.id]),
          [
            ['text', undefined],
            ['tool_use', 'toolu_order_700'],
          ],
        );
        const [result] = toolResultsOf(resumed[1].body);
        assert.equal(result.tool_use_id, 'toolu_order_700');
        assert.equal(result.is_error, false);
        assert.deepEqual(JSON.parse(String(result.content)), { status: 200, body: { received: 2 } });
        assert.deepEqual(
          rows[0].reasoning.map((r: { type: string; text?: string }) => [r.type, r.text]),
          [
            ['text', 'Posting the order to the warehouse.'],
            ['tool_call', undefined],
            ['approval', 'approved by reviewer@test'],
            ['tool_result', undefined],
            ['tool_call', undefined],
          ],
        );
        const decided = await h.stack.knex('approvals').where({ id: approval.id }).first();
        assert.deepEqual([decided.status, decided.decided_by], ['approved', 'reviewer@test']);

        // Two turns per item, each counted once although one item stopped in between.
        assert.deepEqual([rows[0].usage.input_tokens, rows[0].usage.output_tokens], [200, 20]);
        assert.deepEqual([Number(done.usage.input_tokens), Number(done.usage.output_tokens)], [400, 40]);
        assert.equal((await h.stack.knex('model_checkpoints').where({ run_id: started.id })).length, 0);

        // The page workflow's history, with the stop and the resume, replays against the current code.
        const history = await h.client.workflow.getHandle(approval.workflow_id).fetchHistory();
        for await (const replayed of Worker.runReplayHistories({ workflowBundle: h.stack.workflowBundle }, [
          { workflowId: approval.workflow_id, history },
        ])) {
          assert.equal(replayed.error, undefined, `the page did not replay: ${replayed.error}`);
        }
      });

      it('reject → the call is never made; the model is told a reviewer rejected it and answers anyway', async () => {
        fake.setHandler((body) => (turnOf(body) === 0 ? callWarehouse(body) : reportStatus(body)));
        const started = await start(reviewed(), [orderMessage(800)]);
        const [approval] = await pendingApprovals(started.id, 1);
        await decide(approval, { approve: false, reason: 'duplicate order' });
        const done = await waitForRun(h, started.id);

        assert.equal(done.status, 'completed');
        const [row] = await items(h, started.id);
        assert.deepEqual([row.status, row.data.status], ['done', -1]);
        assert.equal(sink.requests.length, 0);
        const [result] = toolResultsOf(fake.requests[1].body);
        assert.equal(result.is_error, true);
        assert.match(String(result.content), /rejected by reviewer@test: duplicate order/);
        assert.equal((await h.stack.knex('approvals').where({ id: approval.id }).first()).status, 'rejected');
      });

      it('approve with edits → the call runs with the edited arguments, and the model hears of the change', async () => {
        fake.setHandler((body) => {
          if (turnOf(body) === 0) return callWarehouse(body);
          const [result] = toolResultsOf(body);
          const status = Number(/"status":(\d+)/.exec(String(result.content))?.[1] ?? -1);
          return reply([toolUse('submit_output', { status })]);
        });
        const started = await start(reviewed(), [orderMessage(900)]);
        const [approval] = await pendingApprovals(started.id, 1);
        await decide(approval, { approve: true, arguments: { ...approval.arguments, body: { order: 901 } } });
        const done = await waitForRun(h, started.id);

        assert.equal(done.status, 'completed');
        assert.deepEqual(
          sink.requests.map((r) => r.body),
          [{ order: 901 }],
        );
        const [result] = toolResultsOf(fake.requests[1].body);
        assert.match(String(result.content), /changed the arguments.*"order":901/);
        assert.equal((await items(h, started.id))[0].data.status, 200);
      });

      it('timeout → the policy decides (here: approve), and the call runs', async () => {
        fake.setHandler((body) => (turnOf(body) === 0 ? callWarehouse(body) : reportStatus(body)));
        const started = await start(reviewed({ approval_timeout_seconds: 1, on_approval_timeout: 'approve' }), [
          orderMessage(300),
        ]);
        const done = await waitForRun(h, started.id);
        assert.equal(done.status, 'completed');
        assert.deepEqual(
          sink.requests.map((r) => r.body),
          [{ order: 300 }],
        );
        const approval = await h.stack.knex('approvals').where({ run_id: started.id }).first();
        assert.deepEqual([approval.status, approval.decided_by], ['timed_out', 'policy']);
      });

      it('several calls in one turn: those allowed run at once, the item waits for every held one to be decided', async () => {
        const orders = [5, 500, 600];
        fake.setHandler((body) => {
          if (turnOf(body) === 0) {
            return reply(
              orders.map((order) =>
                toolUse(
                  'http_request',
                  { method: 'POST', url: `${sink.url}/warehouse`, body: { order } },
                  `toolu_${order}`,
                ),
              ),
            );
          }
          const results = toolResultsOf(body);
          return reply([toolUse('submit_output', { status: results.filter((r) => !r.is_error).length })]);
        });
        const started = await start(reviewed(), [orderMessage(1)]);
        const [first, second] = await pendingApprovals(started.id, 2);
        assert.deepEqual([first.arguments.body, second.arguments.body], [{ order: 500 }, { order: 600 }]);
        assert.deepEqual(
          sink.requests.map((r) => r.body),
          [{ order: 5 }],
        );

        await decide(first, { approve: true });
        const [stillHeld] = await items(h, started.id);
        assert.equal(stillHeld.status, 'needs_review', 'one call is still undecided');
        assert.equal(fake.requests.length, 1, 'the model waits for every decision');
        await decide(second, { approve: false });
        const done = await waitForRun(h, started.id);

        assert.equal(done.status, 'completed');
        assert.deepEqual(
          sink.requests.map((r) => r.body),
          [{ order: 5 }, { order: 500 }],
        );
        const results = toolResultsOf(fake.requests[1].body);
        assert.deepEqual(
          results.map((r) => [r.tool_use_id, r.is_error]),
          [
            ['toolu_5', false],
            ['toolu_500', false],
            ['toolu_600', true],
          ],
        );
        assert.equal((await items(h, started.id))[0].data.status, 2);
      });

      it('an approved call runs once even when the resumed step is retried after the model became unavailable', async () => {
        let followUps = 0;
        fake.setHandler((body) => {
          if (turnOf(body) === 0) return callWarehouse(body);
          return ++followUps <= 3 ? apiErrors.overloaded() : reportStatus(body); // the SDK gives up after 3 tries
        });
        const started = await start(reviewed({ error_policy: { retries: 1 } }), [orderMessage(400)]);
        const [approval] = await pendingApprovals(started.id, 1);
        await decide(approval, { approve: true });
        const done = await waitForRun(h, started.id);

        assert.equal(done.status, 'completed');
        const [row] = await items(h, started.id);
        assert.deepEqual([row.status, row.data.status], ['done', 200]);
        assert.equal(sink.requests.length, 1);
        assert.equal(fake.requests.length, 5, 'the first turn once; then 3 × 529 and the answer');
      });

      it('a retried attempt of a step that stopped finds the stop instead of asking the model again', async () => {
        fake.setHandler((body) => (turnOf(body) === 0 ? callWarehouse(body) : reportStatus(body)));
        const agent = await createLiveAgent(h, ws, reviewed());
        const runId = randomUUID();
        await h.stack.knex('runs').insert({
          id: runId,
          workspace_id: ws,
          agent_id: agent.id,
          agent_version: agent.current_version,
          trigger: 'api',
          input: '[]',
          total: 1,
        });
        await h.stack
          .knex('run_items')
          .insert({ run_id: runId, seq: 0, status: 'running', data: orderMessage(650), node_id: 'notify' });
        const activities = createActivities({ knex: h.stack.knex, config: h.config });
        const env = new MockActivityEnvironment({ workflowExecution: { workflowId: 'page-under-test', runId: 'r' } });
        const step = { runId, agentId: agent.id, agentVersion: agent.current_version, seq: 0, nodeId: 'notify' };
        const attempt = (decisions?: Record<string, unknown>) =>
          env.run(activities.executeStep, { ...step, maxAttempts: 1, decisions: decisions as never });

        const stopped = (await attempt()) as { awaiting: string[] };
        assert.equal(stopped.awaiting?.length, 1, 'the step stops on the call');
        assert.deepEqual(await attempt(), stopped, 'the retry answers with the same approval');
        assert.equal(fake.requests.length, 1, 'and does not ask the model again');
        const approvals = await h.stack.knex('approvals').where({ run_id: runId });
        assert.deepEqual(
          approvals.map((a) => [a.id, a.workflow_id, a.status]),
          [[stopped.awaiting[0], 'page-under-test', 'pending']],
        );

        const approve = { [stopped.awaiting[0]]: { approved: true, by: 'r' } };
        assert.equal(await attempt(approve), 'advanced');
        assert.equal(await attempt(approve), 'already_done', 'a retry of the resumed step after it settled');
        assert.equal(sink.requests.length, 1);
        const [row] = await items(h, runId);
        assert.deepEqual([row.status, row.data.status], ['done', 200]);
      });

      it('cancelling the run while a call waits: the call never happens and the item is skipped', async () => {
        fake.setHandler((body) => (turnOf(body) === 0 ? callWarehouse(body) : reportStatus(body)));
        const started = await start(reviewed(), [orderMessage(200)]);
        await pendingApprovals(started.id, 1);
        await h.client.workflow.getHandle(runWorkflowId(started.id)).cancel();
        const done = await waitForRun(h, started.id);
        assert.equal(done.status, 'cancelled');
        assert.equal((await items(h, started.id))[0].status, 'skipped');
        assert.equal((await h.stack.knex('approvals').where({ run_id: started.id }).first()).status, 'cancelled');
        assert.equal(sink.requests.length, 0);
        assert.equal(fake.requests.length, 1);
      });
    });
  });

  describe('transient API errors', () => {
    it('absorbs 429 (with retry-after) and 529 through the SDK retries under the default policy', async () => {
      fake.setHandler((body, index) => [apiErrors.rateLimited('1'), apiErrors.overloaded()][index] ?? submitted(body));
      const { run: done, rows } = await run(extractAgent('transient'), [orderMessage(3)]);
      assert.equal(done.status, 'completed');
      assert.equal(rows[0].status, 'done');
      assert.deepEqual(rows[0].data, { ...orderMessage(3), ...expectedOrder(3) });
      assert.equal(fake.requests.length, 3);
      assert.deepEqual(
        fake.requests.map((r) => r.headers['x-stainless-retry-count']),
        ['0', '1', '2'],
      );
      assert.equal(new Set(fake.requests.map((r) => JSON.stringify(r.body))).size, 1); // the same request, retried
    });

    it('429, 500 and 529 in a row: the SDK gives up and the activity retry (retries: 1) completes the item', async () => {
      fake.setHandler(
        (body, index) =>
          [apiErrors.rateLimited('0'), apiErrors.internal(), apiErrors.overloaded()][index] ?? submitted(body),
      );
      const { run: done, rows } = await run(extractAgent('transient retried', { error_policy: { retries: 1 } }), [
        orderMessage(4),
      ]);
      assert.equal(done.status, 'completed');
      assert.equal(rows[0].status, 'done');
      assert.deepEqual(rows[0].data, { ...orderMessage(4), ...expectedOrder(4) });
      assert.equal(fake.requests.length, 4);
      assert.deepEqual(
        fake.requests.map((r) => r.headers['x-stainless-retry-count']),
        ['0', '1', '2', '0'], // three SDK tries, then a new activity attempt
      );
      assert.deepEqual(rows[0].usage, {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 0,
        cost_usd: (100 * 3 + 20 * 15) / 1e6,
      });
    });

    it('with no activity retries left, the item fails with the API message after the SDK retries', async () => {
      fake.setHandler(
        (body, index) =>
          [apiErrors.rateLimited('0'), apiErrors.internal(), apiErrors.overloaded()][index] ?? submitted(body),
      );
      const { run: done, rows } = await run(extractAgent('transient default'), [orderMessage(5)]);
      assert.equal(done.status, 'failed'); // its only item failed
      assert.equal(done.error, 'all 1 items failed');
      assert.deepEqual([done.done, done.failed], [0, 1]);
      assert.equal(rows[0].error, 'extract: the model API is unavailable (529): Overloaded');
      assert.equal(fake.requests.length, 3);
    });
  });

  describe('output schema', () => {
    const wrongly = (body: MessagesRequest) =>
      reply([toolUse('submit_output', { ...extract(body), order: `#${extract(body).order}` })], {
        usage: { input_tokens: 80, output_tokens: 10 },
      });

    it('fails the item naming the schema problem when the answer violates the schema twice', async () => {
      fake.setHandler((body) => wrongly(body));
      const { run: done, rows } = await run(extractAgent('schema twice'), [orderMessage(11)]);
      assert.equal(done.status, 'failed'); // its only item failed
      assert.deepEqual([done.done, done.failed], [0, 1]);
      assert.equal(rows[0].status, 'failed');
      assert.equal(
        rows[0].error,
        "extract: the model's answer does not match the output schema: data/order must be integer",
      );
      assert.equal(fake.requests.length, 2); // one retry with the validation error, no more
      // The two answers still cost tokens: the item and the run count them, and the reasoning shows them.
      assert.deepEqual(
        [rows[0].usage.input_tokens, rows[0].usage.output_tokens],
        [160, 20],
        'the failed item keeps its usage',
      );
      assert.equal(Number(done.usage.input_tokens), 160, "and the run's usage counts it");
      assert.equal(rows[0].reasoning.filter((r: { type: string }) => r.type === 'tool_call').length, 2);
    });

    it('retries once with the validation error as an is_error tool_result, and accepts the corrected answer', async () => {
      fake.setHandler((body) =>
        turnOf(body) === 0
          ? reply([toolUse('submit_output', { ...extract(body), order: 'eleven' }, 'toolu_first_try')])
          : submitted(body),
      );
      const { rows } = await run(extractAgent('schema once'), [orderMessage(12)]);
      assert.equal(rows[0].status, 'done');
      assert.deepEqual(rows[0].data, { ...orderMessage(12), ...expectedOrder(12) });
      assert.equal(fake.requests.length, 2);
      const [result] = toolResultsOf(fake.requests[1].body);
      assert.equal(result.tool_use_id, 'toolu_first_try');
      assert.equal(result.is_error, true);
      assert.match(String(result.content), /data\/order must be integer/);
      assert.deepEqual(
        rows[0].reasoning.map((r: { type: string; input?: { order: unknown } }) => [r.type, r.input?.order]),
        [
          ['tool_call', 'eleven'],
          ['tool_call', 12],
        ],
      );
    });

    it('asks for submit_output when the model answers in prose', async () => {
      fake.setHandler((body) =>
        turnOf(body) === 0 ? reply([text('That is order 13, one tin of slate.')]) : submitted(body),
      );
      const { rows } = await run(extractAgent('prose'), [orderMessage(13)]);
      assert.equal(rows[0].status, 'done');
      assert.deepEqual(rows[0].data, { ...orderMessage(13), ...expectedOrder(13) });
      const last = fake.requests[1].body.messages.at(-1)!;
      assert.equal(last.role, 'user');
      assert.match(JSON.stringify(last.content), /Call submit_output/);
    });

    it('fails the item, not the run, on a malformed response body', async () => {
      fake.setHandler(() => ({ status: 200, raw: '{"id":"msg_x","type":"message","content":[' }));
      const { run: done, rows } = await run(extractAgent('malformed'), [orderMessage(14)]);
      assert.deepEqual([done.status, done.failed], ['failed', 1]);
      assert.equal(rows[0].status, 'failed');
      assert.match(rows[0].error, /^extract: the model API call failed: .*JSON/);
      assert.doesNotMatch(rows[0].error, /\n\s+at /);
    });
  });

  it('fails one item the API refuses permanently, alone, with the API message; the run completes', async () => {
    const refusal = 'messages.0.content: prompt is too long: 212345 tokens > 200000 maximum';
    fake.setHandler((body) => (extract(body).order === 22 ? apiErrors.invalidRequest(refusal) : submitted(body)));
    const { run: done, rows } = await run(extractAgent('one refused'), [21, 22, 23].map(orderMessage));
    assert.equal(done.status, 'completed');
    assert.deepEqual([done.total, done.done, done.failed], [3, 2, 1]);
    assert.deepEqual(
      rows.map((r) => r.status),
      ['done', 'failed', 'done'],
    );
    assert.equal(rows[1].error, `extract: the model API refused the request (400): ${refusal}`);
    assert.equal(fake.requests.filter((r) => extract(r.body).order === 22).length, 1); // a 400 is not retried
    const log = await h.stack.knex('run_logs').where({ run_id: done.id, item_seq: 1 }).first();
    assert.match(log.message, /prompt is too long/);
  });

  it('gives an unavailable model extra attempts of its own, apart from the item retries, before failing', async () => {
    const patient = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: modelName, unavailableRetries: 2, retrySeconds: 0.2 },
      } as never,
    });
    try {
      const patientWs = (await createTestWorkspace(patient)).workspace.id;
      // Two activity attempts' worth of 529s (three SDK tries each), then an answer.
      fake.setHandler((body, index) => (index < 6 ? apiErrors.overloaded() : submitted(body)));
      const { run: done, rows } = await run(
        extractAgent('overloaded for a while'),
        [orderMessage(50)],
        patient,
        patientWs,
      );
      assert.equal(done.status, 'completed', 'the item survives an overload with no item retries configured');
      assert.equal(rows[0].status, 'done');
      assert.equal(fake.requests.length, 7);

      fake.reset();
      fake.setHandler(() => apiErrors.overloaded());
      const { rows: given } = await run(extractAgent('overloaded for good'), [orderMessage(51)], patient, patientWs);
      assert.equal(given[0].status, 'failed');
      assert.equal(given[0].error, 'extract: the model API is unavailable (529): Overloaded');
      assert.equal(fake.requests.length, 9, 'one attempt and two extra, three SDK tries each');
    } finally {
      await patient.close();
    }
  });

  it('names the model API when it cannot be reached (a wrong ANTHROPIC_BASE_URL)', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`; // nothing listens there
    const lost = await createHarness({
      config: { model: { apiKey: 'test-key', baseUrl: closed, name: modelName } } as never,
    });
    try {
      const lostWs = (await createTestWorkspace(lost)).workspace.id;
      const { rows } = await run(extractAgent('unreachable'), [orderMessage(41)], lost, lostWs);
      assert.equal(rows[0].status, 'failed');
      assert.equal(rows[0].error, 'extract: the model API call failed: Connection error.');
    } finally {
      await lost.close();
    }
  });

  it('with no model configured, fails each llm item with a clear message and no stack trace', async () => {
    const bare = await createHarness({
      config: {
        model: { apiKey: undefined, baseUrl: fake.url, name: modelName },
        http: { allowHosts: ['127.0.0.1'] },
      } as never,
    });
    try {
      const bareWs = (await createTestWorkspace(bare)).workspace.id;
      const { run: done, rows } = await run(
        extractAgent('no model'),
        [orderMessage(31), orderMessage(32)],
        bare,
        bareWs,
      );
      // the run ends rather than waiting on a model that will never come; every item failed, so it failed
      assert.deepEqual([done.status, done.error, done.done, done.failed], ['failed', 'all 2 items failed', 0, 2]);
      for (const row of rows) {
        assert.equal(row.status, 'failed');
        assert.equal(row.error, 'extract: no model configured: set ANTHROPIC_API_KEY');
      }
      const logs = await bare.stack.knex('run_logs').where({ run_id: done.id, level: 'warn' });
      assert.deepEqual(
        logs.map((l) => l.message),
        Array(2).fill('extract failed after 1 attempt(s): no model configured: set ANTHROPIC_API_KEY'),
      );
      assert.equal(fake.requests.length, 0);
    } finally {
      await bare.close();
    }
  });
});
