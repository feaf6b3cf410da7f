// The review queue: items a flag_for_review node stopped wait in their run's workflow until a reviewer decides;
// accept, accept with an edited output, reject with a reason and send on to a named node each settle or move the
// item, the decision is recorded with who and when, and the run ends once nothing is left to review.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { checkedFetch } from '../support/openapi-check';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('review queue for flagged items', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
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

  const call = async (url: string, json?: unknown) => {
    const res = await checkedFetch(`${api.url}/v1${url}`, {
      method: json === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  it('holds flagged items until each is decided, records who decided, and ends the run after the last', async () => {
    const spec = JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples/route-csv-rows.json'), 'utf8'));
    const agent = await createLiveAgent(h, ws, spec);
    const input = [
      'invoice,vendor,amount',
      'INV-1,Acme,12000',
      'INV-2,Globex,15000',
      'INV-3,Initech,18000',
      'INV-4,Umbrella,21000',
      'INV-5,Small,90',
    ].join('\n');
    const run = await startTestRun(h, ws, agent.id, input);
    await waitForRun(h, run.id, (r) => Number(r.needs_review) === 4);

    const queue = await call(`/reviews?run_id=${run.id}&status=pending`);
    assert.equal(queue.status, 200);
    assert.equal(queue.body.data.length, 4);
    const bySeq = new Map<number, Json>(queue.body.data.map((r: Json) => [r.item_seq, r]));
    assert.equal(bySeq.get(0)!.reason, 'invoice INV-1 from Acme is over 10,000');
    assert.equal(bySeq.get(0)!.data.amount, 12000);
    assert.equal(bySeq.get(0)!.agent_name, 'Route invoice rows');
    assert.equal((await call(`/reviews?agent_id=${agent.id}`)).body.data.length, 4, 'filtered by agent');
    // While people decide, the run waits rather than ending.
    const waiting = await call(`/runs/${run.id}`);
    assert.equal(waiting.body.status, 'needs_review');
    assert.equal(waiting.body.ended_at, null);

    // Refusals first: nothing is applied.
    const noReason = await call(`/reviews/${bySeq.get(2)!.id}/decision`, { action: 'reject' });
    assert.equal(noReason.status, 422);
    assert.equal(noReason.body.code, 'reason_required');
    const nowhere = await call(`/reviews/${bySeq.get(3)!.id}/decision`, { action: 'send_to', node_id: 'nowhere' });
    assert.equal(nowhere.status, 422);
    assert.equal(nowhere.body.code, 'unknown_node');

    const accepted = await call(`/reviews/${bySeq.get(0)!.id}/decision`, { action: 'accept' });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    assert.equal(accepted.body.status, 'accepted');
    assert.equal(accepted.body.decided_by, 'API key "test key"');
    assert.ok(accepted.body.decided_at);
    const again = await call(`/reviews/${bySeq.get(0)!.id}/decision`, { action: 'reject', reason: 'changed my mind' });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'review_decided');

    const edited = await call(`/reviews/${bySeq.get(1)!.id}/decision`, {
      action: 'accept',
      output: { invoice: 'INV-2', amount: 14000, note: 'corrected' },
    });
    assert.equal(edited.status, 200);
    const rejected = await call(`/reviews/${bySeq.get(2)!.id}/decision`, { action: 'reject', reason: 'duplicate' });
    assert.equal(rejected.body.status, 'rejected');
    const sent = await call(`/reviews/${bySeq.get(3)!.id}/decision`, { action: 'send_to', node_id: 'report' });
    assert.equal(sent.body.status, 'sent_on');

    const ended = await waitForRun(h, run.id);
    assert.equal(ended.status, 'completed');
    const items: Json[] = await h.stack
      .knex('run_items')
      .where({ run_id: run.id })
      .orderBy('seq')
      .select('seq', 'status', 'output', 'output_node', 'error');
    assert.deepEqual(
      items.map((i) => [i.seq, i.status]),
      [
        [0, 'done'],
        [1, 'done'],
        [2, 'failed'],
        [3, 'done'],
        [4, 'done'],
      ],
    );
    assert.deepEqual(items[1].output, { invoice: 'INV-2', amount: 14000, note: 'corrected' });
    assert.match(items[2].error, /rejected by API key "test key": duplicate/);
    assert.equal(items[3].output_node, 'report', 'sent on to the report node');
    assert.equal(items[3].output.invoice, 'INV-4');
    assert.equal((await call(`/reviews?run_id=${run.id}&status=pending`)).body.data.length, 0);
  });
});
