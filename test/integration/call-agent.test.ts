// call_agent nodes against the real engine: an item runs another agent and gets its outputs, or just starts
// it; the called run is a real run (its own trigger, counted, listed); loops and unknown agents are refused.
import assert from 'node:assert/strict';
import { runWorkflowId } from '../../model/run-identity';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startApi,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { checkedFetch } from '../support/openapi-check';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
type Json = any;

describe('call_agent', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let ws: string;
  let key: string;
  before(async () => {
    h = await createHarness();
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    ws = t.workspace.id;
    key = t.key;
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const call = async (path: string, method: string, json?: unknown) => {
    const res = await checkedFetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(json ? { 'content-type': 'application/json' } : {}) },
      body: json ? JSON.stringify(json) : undefined,
    });
    return { status: res.status, body: (res.status === 204 ? null : await res.json()) as Json };
  };
  const callee = (name: string, extra: object[] = []) => ({
    name,
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: extra.length ? 'gate' : 'mark' },
      ...extra,
      { kind: 'transform', id: 'mark', set: { handled: true }, next: 'out' },
      { kind: 'output', id: 'out', format: 'json' },
    ],
  });
  const caller = (name: string, target: string, wait: boolean) => ({
    name,
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'ask' },
      { kind: 'call_agent', id: 'ask', agent_id: target, input: '[{{$item}}]', wait, save_as: 'answer', next: 'out' },
      { kind: 'output', id: 'out', format: 'json' },
    ],
  });

  it('runs the called agent per item, waits for it and keeps its outputs', async () => {
    const b = await createLiveAgent(h, ws, callee('B'));
    const created = await call('/v1/agents', 'POST', caller('A', b.id, true));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await h.stack.knex('agents').where({ id: created.body.id }).update({ state: 'live' });

    const run = await startTestRun(h, ws, created.body.id, '[{"n":1},{"n":2}]');
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed');
    const outputs = (await items(h, run.id)).map((i) => i.output);
    const calledRuns = await h.stack.knex('runs').where({ agent_id: b.id }).orderBy('created_at');
    assert.equal(calledRuns.length, 2, 'one run of B per item');
    assert.ok(calledRuns.every((r) => r.trigger === 'agent' && r.status === 'completed'));
    for (const [i, out] of outputs.entries()) {
      assert.equal(out.answer.status, 'completed');
      assert.deepEqual(out.answer.outputs, [{ n: i + 1, handled: true }]);
      assert.ok(calledRuns.some((r) => r.id === out.answer.run_id));
    }
    const listed = await call(`/v1/runs?agent_id=${b.id}&trigger=agent`, 'GET');
    assert.equal(listed.body.data.length, 2, 'the called runs are real runs, listed like any other');
    // Each called run links back to the run, item and node that called it.
    assert.deepEqual(
      listed.body.data.map((r: Json) => r.called_by).sort((x: Json, y: Json) => x.item_seq - y.item_seq),
      [0, 1].map((seq) => ({ run_id: run.id, item_seq: seq, node_id: 'ask' })),
    );
    const callerDetails = await call(`/v1/runs/${run.id}`, 'GET');
    assert.equal(callerDetails.body.called_by, null);
  });

  it('only starts the called agent when it does not wait, and fails the item when it cannot be called', async () => {
    const b = await createLiveAgent(h, ws, callee('B2'));
    const a = await createLiveAgent(h, ws, caller('A2', b.id, false));
    const run = await waitForRun(h, (await startTestRun(h, ws, a.id, '[{"n":1}]')).id);
    assert.equal(run.status, 'completed');
    const [item] = await items(h, run.id);
    assert.equal(item.output.answer.status, 'started');
    await waitForRun(h, item.output.answer.run_id);

    await h.stack.knex('agents').where({ id: b.id }).update({ state: 'paused' });
    const refused = await waitForRun(h, (await startTestRun(h, ws, a.id, '[{"n":2}]')).id);
    const [failed] = await items(h, refused.id);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error, /the called agent "B2" is paused; only a live agent can be called/);
  });

  it('cancelling a run cancels the run it waits on', async () => {
    const b = await createLiveAgent(
      h,
      ws,
      callee('B3', [{ kind: 'approval', id: 'gate', message: 'ok?', next: 'mark' }]),
    );
    const a = await createLiveAgent(h, ws, caller('A3', b.id, true));
    const run = await startTestRun(h, ws, a.id, '[{"n":1}]');
    const waiting = await (async () => {
      for (;;) {
        const row = await h.stack.knex('runs').where({ agent_id: b.id }).first();
        if (row?.status === 'needs_review') return row;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    await h.client.workflow.getHandle(runWorkflowId(run.id)).cancel();
    assert.equal((await waitForRun(h, run.id)).status, 'cancelled');
    assert.equal((await waitForRun(h, waiting.id)).status, 'cancelled');
  });

  it('a called run cancelled on its own (its workflow ends Canceled) fails the item that waited, not the run', async () => {
    const b = await createLiveAgent(
      h,
      ws,
      callee('B4', [{ kind: 'approval', id: 'gate', message: 'ok?', next: 'mark' }]),
    );
    const a = await createLiveAgent(h, ws, caller('A4', b.id, true));
    const run = await startTestRun(h, ws, a.id, '[{"n":1}]');
    const waiting = await (async () => {
      for (;;) {
        const row = await h.stack.knex('runs').where({ agent_id: b.id }).first();
        if (row?.status === 'needs_review') return row;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    await h.client.workflow.getHandle(runWorkflowId(waiting.id)).cancel();
    assert.equal((await waitForRun(h, waiting.id)).status, 'cancelled');
    const ended = await waitForRun(h, run.id);
    assert.equal(ended.status, 'failed');
    const [item] = await items(h, run.id);
    assert.equal(item.status, 'failed');
    assert.match(item.error, /the called run .* ended cancelled/);
    const status = async (id: string) => (await h.client.workflow.getHandle(runWorkflowId(id)).describe()).status.name;
    assert.equal(await h.client.workflow.getHandle(runWorkflowId(run.id)).result(), 'failed');
    assert.equal(await status(waiting.id), 'CANCELLED');
    assert.equal(await status(run.id), 'COMPLETED');
  });

  it('refuses calls of unknown agents and agents that would call each other without end', async () => {
    const unknown = await call('/v1/agents', 'POST', caller('Lost', '00000000-0000-4000-8000-000000000000', true));
    assert.equal(unknown.status, 422);
    assert.equal(unknown.body.code, 'called_agent_not_found');

    const b = await call('/v1/agents', 'POST', callee('Loop B'));
    const a = await call('/v1/agents', 'POST', caller('Loop A', b.body.id, true));
    const loop = await call(`/v1/agents/${b.body.id}`, 'PUT', caller('Loop B', a.body.id, true));
    assert.equal(loop.status, 422);
    assert.equal(loop.body.code, 'call_cycle');
    assert.match(loop.body.detail, /Loop B → Loop A → Loop B/);
    const self = await call(`/v1/agents/${a.body.id}`, 'PUT', caller('Loop A', a.body.id, true));
    assert.equal(self.body.code, 'call_cycle');
  });
});
