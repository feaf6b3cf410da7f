// One door to start a run (services/runs/start.ts): the API, a webhook and a schedule's fire refuse the same agent and
// the same input the same way, a batch's delivery its run could not read is refused before the run opens, and every
// kind of run starts as the current run workflow type.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { signWebhook } from '../../services/triggers/webhook-signature';
import { currentRunType } from '../../model/run-identity';
import { checkedFetch } from '../support/openapi-check';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = any;

const agentReading = (format: string, name = `${format} reader`) => ({
  name,
  nodes: [
    { kind: 'input', id: 'in', format, next: 'count' },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'seen', by: 1 }, next: 'out' },
    { kind: 'output', id: 'out', format: 'json' },
  ],
});

/** Standard Webhooks signing, written out here rather than borrowed from the code under test. */
describe('one door to start a run', function () {
  this.timeout(180_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let ws: string;

  before(async () => {
    h = await createHarness();
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const call = async (path: string, json?: unknown, method = json === undefined ? 'GET' : 'POST') => {
    const res = await checkedFetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Json };
  };
  const trigger = async (agentId: string, json: object) => {
    const created = await call(`/v1/agents/${agentId}/triggers`, json);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body as Json;
  };
  const deliver = async (hook: Json, body: string) => {
    const id = `msg_${randomUUID()}`;
    const ts = Math.floor(Date.now() / 1000);
    const res = await checkedFetch(`${api.url}/v1/hooks/${hook.id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': signWebhook(hook.secret, id, ts, body),
      },
      body,
    });
    return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Json };
  };
  /** What the schedule starts at a fire, started by hand: Temporal names each fire's workflow after its time. */
  const fire = (triggerId: string, at: string) =>
    h.client.workflow.execute('scheduledRun', {
      workflowId: `scheduled-${triggerId}-${at}`,
      taskQueue: h.temporalConfig.taskQueue,
      args: [{ triggerId }],
    });
  const runsOf = (agentId: string) => h.stack.knex('runs').where({ agent_id: agentId }).orderBy('created_at');
  const skipsOf = async (agentId: string) =>
    ((await call(`/v1/agents/${agentId}/timeline?limit=100`)).body.data as Json[]).filter(
      (e) => e.kind === 'trigger_skipped',
    );
  const eventually = async <T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> => {
    for (let i = 0; i < 300; i++) {
      const value = await probe();
      if (value) return value;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  it('refuses a paused agent the same way through the API, a webhook and a schedule fire', async () => {
    const agent = await createLiveAgent(h, ws, agentReading('json', 'paused everywhere'));
    const hook = await trigger(agent.id, { kind: 'webhook' });
    const schedule = await trigger(agent.id, { kind: 'schedule', schedule: { type: 'daily', at: '03:00' } });
    assert.equal((await call(`/v1/agents/${agent.id}/state`, { state: 'paused' })).status, 200);

    const viaApi = await call(`/v1/agents/${agent.id}/run`, { input: '[{"n":1}]' });
    assert.equal(viaApi.status, 409);
    assert.equal(viaApi.body.code, 'agent_not_live');
    const viaHook = await deliver(hook, '[{"n":1}]');
    assert.equal(viaHook.status, 409);
    assert.equal(viaHook.type, 'application/problem+json; charset=utf-8');
    assert.equal(viaHook.body.code, 'agent_not_live');
    assert.equal(viaHook.body.state, 'paused');
    const viaFireNow = await call(`/v1/triggers/${schedule.id}/fire`, {});
    assert.equal(viaFireNow.status, 409);
    assert.equal(viaFireNow.body.code, 'agent_not_live');
    // A fire racing the pause: nothing ran, and the fire is a skipped run with the door's reason.
    assert.match(String(await fire(schedule.id, '2026-01-05T03:00:00Z')), /^skipped: the agent is paused/);
    const runs = await runsOf(agent.id);
    assert.deepEqual(
      runs.map((r) => [r.status, r.trigger]),
      [['skipped', 'schedule']],
    );
    assert.equal(await h.stack.knex('run_items').where({ run_id: runs[0].id }).first(), undefined);
    const skips = await skipsOf(agent.id);
    assert.ok(
      skips.some((e) => e.trigger_id === hook.id) && skips.some((e) => e.run_id === runs[0].id),
      'the refused delivery and the skipped fire are on the timeline',
    );
    assert.ok(skips.every((e) => e.details.reason === 'paused'));
  });

  it('refuses input the agent cannot read the same way through the API, a webhook and a schedule fire', async () => {
    const agent = await createLiveAgent(h, ws, agentReading('csv', 'reads csv'));
    const viaApi = await call(`/v1/agents/${agent.id}/run`, { input: '{"invoice":"INV-1"}' });
    assert.equal(viaApi.status, 422);
    assert.equal(viaApi.body.code, 'input_unparseable');

    // A webhook answers at once: refused with the same problem, whether it starts runs or batches its deliveries.
    const hook = await trigger(agent.id, { kind: 'webhook' });
    const viaHook = await deliver(hook, '{"invoice":"INV-1"}');
    assert.equal(viaHook.status, 422);
    assert.equal(viaHook.body.code, 'input_unparseable');
    assert.equal(viaHook.body.detail, viaApi.body.detail);
    const batching = await trigger(agent.id, { kind: 'webhook', batch: { max_wait_ms: 200, max_items: 10 } });
    const viaBatch = await deliver(batching, '{"invoice":"INV-1"}');
    assert.equal(viaBatch.status, 422);
    assert.equal(viaBatch.body.code, 'input_unparseable');
    assert.equal(
      await h.stack.knex('trigger_deliveries').where({ trigger_id: batching.id }).first(),
      undefined,
      'a refused delivery is not stored',
    );

    // A schedule's input was read when it was saved; the agent then changed to read JSON. Its fire opens no run, and
    // says why on the timeline with the API's own refusal.
    const schedule = await trigger(agent.id, {
      kind: 'schedule',
      schedule: { type: 'daily', at: '03:00' },
      input: 'invoice,amount\nINV-1,5',
    });
    const spec = agentReading('json', 'reads json now');
    assert.equal((await call(`/v1/agents/${agent.id}`, spec, 'PUT')).status, 200);
    const refusedNow = await call(`/v1/agents/${agent.id}/run`, { input: 'invoice,amount\nINV-1,5' });
    assert.equal(refusedNow.status, 422);
    assert.match(String(await fire(schedule.id, '2026-01-06T03:00:00Z')), /^skipped: /);
    assert.deepEqual(await runsOf(agent.id), [], 'no door opened a run');
    const skipped = (await skipsOf(agent.id)).find((e) => e.trigger_id === schedule.id);
    assert.equal(skipped.details.reason, 'input_unparseable');
    assert.ok(skipped.message.includes(refusedNow.body.detail), skipped.message);
  });

  it('refuses a batched delivery its run could not read before the run opens, with the reason on the timeline', async () => {
    const agent = await createLiveAgent(h, ws, agentReading('auto', 'batch reader'));
    const hook = await trigger(agent.id, { kind: 'webhook', batch: { max_wait_ms: 3_000, max_items: 10 } });
    const taken = await deliver(hook, '{"invoice":"INV-1"}');
    assert.equal(taken.status, 202, JSON.stringify(taken.body));
    // Edited while the delivery waits in its batch: the version the run would open on cannot read it.
    assert.equal((await call(`/v1/agents/${agent.id}`, agentReading('csv'), 'PUT')).status, 200);
    const rejected = await eventually('the rejection', async () =>
      (await skipsOf(agent.id)).find((e) => e.details.delivery_id === taken.body.delivery_id),
    );
    assert.equal(rejected.details.reason, 'input_unparseable');
    assert.match(rejected.message, /rejected \(the agent's input node cannot read this input/);
    const batch = await h.stack.knex('delivery_batches').where({ trigger_id: hook.id }).first();
    await h.client.workflow.getHandle(`delivery-batch-${batch.id}`).result();
    assert.deepEqual(await runsOf(agent.id), [], 'no run was opened for it');
  });

  it('starts every kind of run as the current workflow type', async () => {
    const typeOf = async (runId: string) => (await h.client.workflow.getHandle(`run-${runId}`).describe()).type;
    const agent = await createLiveAgent(h, ws, agentReading('auto', 'current type'));
    const viaApi = await call(`/v1/agents/${agent.id}/run`, { input: '[{"n":1}]' });
    assert.equal(viaApi.status, 202);
    const viaHook = await deliver(await trigger(agent.id, { kind: 'webhook' }), '[{"n":2}]');
    assert.equal(viaHook.status, 202);
    const batching = await trigger(agent.id, { kind: 'webhook', batch: { max_wait_ms: 200, max_items: 10 } });
    assert.equal((await deliver(batching, '{"n":3}')).status, 202);
    const schedule = await trigger(agent.id, { kind: 'schedule', schedule: { type: 'daily', at: '03:00' } });
    await fire(schedule.id, '2026-01-07T03:00:00Z');
    const caller = await createLiveAgent(h, ws, {
      name: 'caller',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'ask' },
        { kind: 'call_agent', id: 'ask', agent_id: agent.id, input: '[{{$item}}]', wait: true, next: 'out' },
        { kind: 'output', id: 'out', format: 'json' },
      ],
    });
    const calling = await call(`/v1/agents/${caller.id}/run`, { input: '[{"n":4}]' });
    assert.equal((await waitForRun(h, calling.body.id)).status, 'completed');

    const runs = await eventually('a run of each door', async () => {
      const rows = await runsOf(agent.id);
      return rows.length === 5 && rows;
    });
    assert.deepEqual(runs.map((r) => r.trigger).sort(), ['agent', 'api', 'schedule', 'webhook', 'webhook']);
    for (const run of runs) {
      assert.equal((await waitForRun(h, run.id)).status, 'completed');
      assert.equal(await typeOf(run.id), currentRunType, `the ${run.trigger} run`);
    }
  });
});
