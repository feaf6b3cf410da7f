// People's decisions exactly as promised, over real HTTP against the real engine: of several reviewers deciding one
// approval (or one flagged item) at once, one is answered 200 and the others 409, the decision is taken once and
// the run goes on, whichever way the requests interleave in the workflow's tasks; "approve with edits" on an
// approval node carries the edits into the item; and a cancelled run closes everything that waited on a person.
import assert from 'node:assert/strict';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { decideUpdate } from '../../workflows/contracts';
import { checkedFetch } from '../support/openapi-check';
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

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('deciding approvals and reviews', function () {
  this.timeout(180_000);
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
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: (await res.json()) as Json };
  };
  const isProblem = (res: { status: number; type: string; body: Json }, status: number, code: string) => {
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.match(res.type, /^application\/problem\+json/);
    assert.equal(res.body.code, code, JSON.stringify(res.body));
  };

  /** An agent whose items each wait at an approval node, then add their amount to the agent's `paid` state. */
  const gatedAgent = (name: string) =>
    createLiveAgent(h, ws, {
      name,
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'gate' },
        { kind: 'approval', id: 'gate', message: 'Pay {{amount}}?', next: 'pay' },
        { kind: 'tool', id: 'pay', tool: 'state.increment', arguments: { key: 'paid', by: '{{amount}}' } },
      ],
    });
  const pendingApprovals = async (runId: string, count: number) => {
    for (;;) {
      const page = await call(`/approvals?status=pending&run_id=${runId}`);
      if (page.body.data.length === count) return page.body.data as Json[];
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** The workflow tasks that failed in the history of the workflow `workflowId` (none, when decisions are taken right). */
  const failedTasks = async (workflowId: string) => {
    const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? [])
      .filter((e) => e.workflowTaskFailedEventAttributes)
      .map((e) => e.workflowTaskFailedEventAttributes!.failure?.message);
  };
  const paid = async (agentId: string) =>
    (await h.stack.knex('agent_state').where({ agent_id: agentId, key: 'paid' }).first())?.value;

  it('five reviewers deciding one approval at once: one 200, four 409 approval_decided, decided once, the run completes', async () => {
    const agent = await gatedAgent('racing reviewers');
    const amounts = [1, 2, 4, 8];
    const run = await startTestRun(h, ws, agent.id, JSON.stringify(amounts.map((amount) => ({ amount }))));
    const approvals = await pendingApprovals(run.id, amounts.length);
    let expected = 0;
    for (const approval of approvals) {
      // Approve and reject mixed, so the winner's decision is the one the approval and the item show.
      const decisions = [0, 1, 2, 3, 4].map((i) => (i % 2 === 0 ? 'approve' : 'reject'));
      const answers = await Promise.all(
        decisions.map((decision, i) =>
          call(`/approvals/${approval.id}/decision`, { decision, comment: `reviewer ${i}` }),
        ),
      );
      const won = answers.filter((a) => a.status === 200);
      assert.equal(won.length, 1, JSON.stringify(answers.map((a) => [a.status, a.body.code ?? a.body.status])));
      for (const lost of answers.filter((a) => a.status !== 200)) isProblem(lost, 409, 'approval_decided');
      const winner = answers.indexOf(won[0]);
      const status = decisions[winner] === 'approve' ? 'approved' : 'rejected';
      assert.equal(won[0].body.status, status);
      // Each one who lost is told what was decided and by whom, whether or not the decision had reached the database.
      for (const lost of answers.filter((a) => a.status !== 200))
        assert.equal(lost.body.detail, `this approval is already ${status} by ${won[0].body.decided_by}`);
      assert.equal(won[0].body.reason, `reviewer ${winner}`);
      const row = await h.stack.knex('approvals').where({ id: approval.id }).first();
      assert.equal(row.status, status);
      assert.equal(row.reason, `reviewer ${winner}`);
      if (status === 'approved') expected += approval.arguments.amount;
    }
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed');
    const logged = await h.stack
      .knex('run_logs')
      .where({ run_id: run.id })
      .where('message', 'like', 'approval %')
      .select('item_seq');
    assert.deepEqual(logged.map((l) => l.item_seq).sort(), [0, 1, 2, 3], 'each approval decided once');
    assert.equal(Number((await paid(agent.id)) ?? 0), expected, 'only the approved items paid');
    const { workflow_id: workflowId } = await h.stack.knex('approvals').where({ id: approvals[0].id }).first();
    assert.deepEqual(await failedTasks(workflowId), []);
  });

  it('concurrent decide updates on the workflow: one succeeds, the rest fail as updates, no workflow task fails', async () => {
    const agent = await gatedAgent('racing updates');
    const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ amount: 10 }, { amount: 20 }, { amount: 40 }]));
    const approvals = await pendingApprovals(run.id, 3);
    const { workflow_id: workflowId } = await h.stack.knex('approvals').where({ id: approvals[0].id }).first();
    const handle = h.client.workflow.getHandle(workflowId);
    for (const approval of approvals) {
      const outcomes = await Promise.allSettled(
        [0, 1, 2, 3, 4].map((i) =>
          handle.executeUpdate(decideUpdate, {
            args: [{ approvalId: approval.id, approve: i % 2 === 0, by: `reviewer ${i}` }],
          }),
        ),
      );
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
      for (const o of outcomes) {
        if (o.status === 'fulfilled') continue;
        assert.ok(o.reason instanceof WorkflowUpdateFailedError, String(o.reason));
        const cause = o.reason.cause;
        assert.ok(cause instanceof ApplicationFailure, String(cause));
        assert.equal(cause.type, 'ApprovalDecided');
      }
    }
    assert.equal((await waitForRun(h, run.id)).status, 'completed');
    assert.deepEqual(await failedTasks(workflowId), []);
  });

  it('five reviewers deciding one flagged item at once: one 200, four 409 review_decided, the run completes', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'racing review',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'check' },
        { kind: 'flag_for_review', id: 'check', reason: 'look at {{n}}' },
      ],
    });
    const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ n: 1 }, { n: 2 }, { n: 3 }]));
    let reviews: Json[];
    while ((reviews = (await call(`/reviews?status=pending&run_id=${run.id}`)).body.data).length < 3)
      await new Promise((r) => setTimeout(r, 100));
    const winners: string[] = [];
    for (const review of reviews) {
      const bodies = [0, 1, 2, 3, 4].map((i) =>
        i % 2 === 0 ? { action: 'accept' } : { action: 'reject', reason: `reviewer ${i} says no` },
      );
      const answers = await Promise.all(bodies.map((b) => call(`/reviews/${review.id}/decision`, b)));
      const won = answers.filter((a) => a.status === 200);
      assert.equal(won.length, 1, JSON.stringify(answers.map((a) => [a.status, a.body.code ?? a.body.status])));
      for (const lost of answers.filter((a) => a.status !== 200)) isProblem(lost, 409, 'review_decided');
      const winner = bodies[answers.indexOf(won[0])];
      winners.push(winner.action);
      assert.equal(won[0].body.status, winner.action === 'accept' ? 'accepted' : 'rejected');
      for (const lost of answers.filter((a) => a.status !== 200))
        assert.equal(lost.body.detail, `this item was already ${won[0].body.status} by ${won[0].body.decided_by}`);
    }
    const done = await waitForRun(h, run.id);
    // Which decision wins each race is chance: a run whose every item was rejected ends failed, as any run whose
    // every item failed does.
    assert.equal(done.status, winners.every((w) => w === 'reject') ? 'failed' : 'completed');
    assert.equal(Number(done.done), winners.filter((w) => w === 'accept').length);
    assert.equal(Number(done.failed), winners.filter((w) => w === 'reject').length);
    const { workflow_id: workflowId } = await h.stack.knex('item_reviews').where({ id: reviews[0].id }).first();
    assert.deepEqual(await failedTasks(workflowId), []);
  });

  it('"approve with edits" on an approval node: the item goes on with the edited data', async () => {
    const agent = await gatedAgent('approve with edits');
    const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ amount: 3000, vendor: 'Acme' }]));
    const [approval] = await pendingApprovals(run.id, 1);
    assert.deepEqual(approval.arguments, { amount: 3000, vendor: 'Acme' });
    const res = await call(`/approvals/${approval.id}/decision`, {
      decision: 'approve_with_edits',
      arguments: { amount: 2500 },
      comment: 'agreed a discount',
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, 'approved');
    assert.deepEqual(res.body.decided_arguments, { amount: 2500 });
    assert.equal((await waitForRun(h, run.id)).status, 'completed');
    assert.equal(Number(await paid(agent.id)), 2500, 'the next step ran with the edited amount');
    const [item] = await items(h, run.id);
    assert.equal(item.data.amount, 2500, 'the edits over the data the gate asked about');
    assert.equal(item.data.vendor, 'Acme');
  });

  it('cancel closes escalated approvals and pending reviews; deciding them then is 409', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'closes with its run',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'gate' },
        {
          kind: 'approval',
          id: 'gate',
          message: 'Pay {{amount}}?',
          when: { field: 'amount', op: 'gt', value: 100 },
          next: 'check',
        },
        {
          kind: 'flag_for_review',
          id: 'check',
          reason: 'small: {{amount}}',
          when: { field: 'amount', op: 'lte', value: 100 },
        },
      ],
      policy: { approval_timeout_seconds: 1, on_approval_timeout: 'escalate' },
    });
    const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ amount: 5000 }, { amount: 10 }]));
    const escalated = async () => (await call(`/approvals?status=escalated&run_id=${run.id}`)).body.data as Json[];
    const pendingReviews = async () => (await call(`/reviews?status=pending&run_id=${run.id}`)).body.data as Json[];
    while ((await escalated()).length < 1 || (await pendingReviews()).length < 1)
      await new Promise((r) => setTimeout(r, 100));
    const [approval] = await escalated();
    const [review] = await pendingReviews();

    assert.equal((await call(`/runs/${run.id}/cancel`, {})).status, 202);
    assert.equal((await waitForRun(h, run.id)).status, 'cancelled');

    assert.deepEqual(await escalated(), [], 'no longer listed as waiting');
    assert.deepEqual(await pendingReviews(), []);
    const closedApproval = (await call(`/runs/${run.id}/approvals`)).body.data.find((a: Json) => a.id === approval.id);
    assert.equal(closedApproval.status, 'cancelled');
    assert.equal(closedApproval.reason, 'run cancelled');
    const closedReview = (await call(`/reviews?run_id=${run.id}`)).body.data.find((r: Json) => r.id === review.id);
    assert.equal(closedReview.status, 'cancelled');
    assert.equal((await call(`/reviews?status=cancelled&run_id=${run.id}`)).body.data.length, 1);

    isProblem(await call(`/approvals/${approval.id}/decision`, { decision: 'approve' }), 409, 'approval_closed');
    isProblem(await call(`/reviews/${review.id}/decision`, { action: 'accept' }), 409, 'review_closed');

    // One left open by an older version (its run ended all the same): the ended workflow answers for it.
    await h.stack.knex('approvals').where({ id: approval.id }).update({ status: 'escalated' });
    await h.stack.knex('item_reviews').where({ id: review.id }).update({ status: 'pending' });
    isProblem(await call(`/approvals/${approval.id}/decision`, { decision: 'reject' }), 409, 'approval_closed');
    isProblem(await call(`/reviews/${review.id}/decision`, { action: 'accept' }), 409, 'review_closed');
  });
});
