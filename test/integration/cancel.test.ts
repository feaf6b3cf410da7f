// A cancelled run ends as Temporal says it did: after its cleanup (items done keep their results, the run is stored
// cancelled with its counts, its open approvals closed) the workflow throws the cancellation again, so the execution
// closes Canceled in `temporal workflow list` and the Temporal UI, page children included. The cancel's answer says
// what the cancel did. (Histories of cancelled runs recorded before, which closed Completed, replay in replay.test.ts.)
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { openRun } from '../../db/open-run';
import { getAgent } from '../../db/agents';
import { runWorkflowId, runWorkflowOptions } from '../../model/run-identity';
import { pageWorkflowId } from '../../workflows/contracts';
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
import type { Workspace } from '../../db/workspaces';

// Items over 100 wait for an approval; the others count at once.
const gated = {
  name: 'gated payments',
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'route' },
    {
      kind: 'branch',
      id: 'route',
      branches: [{ when: { field: 'amount', op: 'gt', value: 100 }, next: 'gate' }],
      otherwise: 'count',
    },
    { kind: 'approval', id: 'gate', message: 'pay {{amount}}?', next: 'count' },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'paid', by: '{{amount}}' }, next: 'out' },
    { kind: 'output', id: 'out', format: 'json' },
  ],
};

describe('cancelled runs end Canceled in Temporal', () => {
  let h: Harness;
  let workspace: Workspace;
  let key: string;

  before(async () => {
    h = await createHarness();
    ({ workspace, key } = await createTestWorkspace(h));
  });
  after(() => h?.close());

  const statusOf = async (workflowId: string) => (await h.client.workflow.getHandle(workflowId).describe()).status.name;

  /** The run's cleanup happened: done items kept their results, open approvals closed, counts stored. */
  async function assertCleanedUp(runId: string, agentId: string, paid: number) {
    const run = await waitForRun(h, runId);
    assert.equal(run.status, 'cancelled');
    assert.ok(run.ended_at, 'the run is ended');
    const state = await h.stack.knex('agent_state').where({ agent_id: agentId, key: 'paid' }).first();
    assert.equal(Number(state?.value ?? 0), paid, 'the items done before the cancel keep their results');
    const approvals = await h.stack.knex('approvals').where({ run_id: runId });
    assert.ok(approvals.length > 0);
    assert.deepEqual(
      approvals.map((a) => a.status),
      approvals.map(() => 'cancelled'),
      'open approvals are closed',
    );
    return run;
  }

  it('POST /v1/runs/{id}/cancel of a run waiting on an approval: answers cancelling, and the execution ends CANCELLED', async () => {
    const agent = await createLiveAgent(h, workspace.id, gated);
    const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify([{ amount: 5 }, { amount: 500 }]));
    await waitForRun(h, run.id, (r) => r.status === 'needs_review' && Number(r.done) === 1);
    const api = await startApi(h);
    let answer: { status: string; id: string };
    try {
      const res = await checkedFetch(`${api.url}/v1/runs/${run.id}/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(res.status, 202);
      answer = (await res.json()) as { status: string; id: string };
    } finally {
      await api.close();
    }
    assert.equal(answer.id, run.id);
    // What the cancel did, not the status from before it (needs_review): winding down, or already ended.
    assert.ok(['cancelling', 'cancelled'].includes(answer.status), `answered ${answer.status}`);

    const ended = await assertCleanedUp(run.id, agent.id, 5);
    assert.deepEqual([ended.done, ended.skipped], [1, 1]);
    const handle = h.client.workflow.getHandle(runWorkflowId(run.id));
    await assert.rejects(
      handle.result(),
      (err) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure,
    );
    assert.equal(await statusOf(runWorkflowId(run.id)), 'CANCELLED');

    // Its history, with the patch's marker, replays with this code.
    const history = await handle.fetchHistory();
    const replayed = Worker.runReplayHistories({ workflowBundle: h.stack.workflowBundle }, [
      { workflowId: runWorkflowId(run.id), history },
    ]);
    for await (const result of replayed) assert.equal(result.error, undefined, String(result.error));
  });

  it('a run of the agentRun type (started by schedules, chains, event polls) ends CANCELLED too', async () => {
    const agent = await createLiveAgent(h, workspace.id, gated);
    const opened = await openRun(h.stack.knex, {
      workspace,
      agent: (await getAgent(h.stack.knex, workspace.id, agent.id))!,
      input: JSON.stringify([{ amount: 7 }, { amount: 700 }]),
      trigger: 'schedule',
    });
    const run = opened.outcome === 'created' ? opened.run : assert.fail(opened.outcome);
    await h.client.workflow.start('agentRun', { ...runWorkflowOptions(run), taskQueue: h.temporalConfig.taskQueue });
    await waitForRun(h, run.id, (r) => r.status === 'needs_review' && Number(r.done) === 1);
    await h.client.workflow.getHandle(runWorkflowId(run.id)).cancel();
    await assertCleanedUp(run.id, agent.id, 7);
    await assert.rejects(h.client.workflow.getHandle(runWorkflowId(run.id)).result(), WorkflowFailedError);
    assert.equal(await statusOf(runWorkflowId(run.id)), 'CANCELLED');
  });

  it('a run of two pages: the run and the page that waited end CANCELLED, the page that finished COMPLETED', async () => {
    const agent = await createLiveAgent(h, workspace.id, gated);
    // 1,001 items: page 0 holds the one that waits on an approval, page 1 one item that counts at once.
    const input = [{ amount: 500 }, ...Array.from({ length: 1000 }, () => ({ amount: 1 }))];
    const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify(input));
    await waitForRun(h, run.id, (r) => r.status === 'needs_review' && Number(r.done) === 1000, 300_000);
    await h.client.workflow.getHandle(runWorkflowId(run.id)).cancel();
    await assertCleanedUp(run.id, agent.id, 1000);
    await assert.rejects(h.client.workflow.getHandle(runWorkflowId(run.id)).result(), WorkflowFailedError);
    assert.equal(await statusOf(runWorkflowId(run.id)), 'CANCELLED');
    assert.equal(await statusOf(pageWorkflowId(runWorkflowId(run.id), 0)), 'CANCELLED');
    assert.equal(await statusOf(pageWorkflowId(runWorkflowId(run.id), 1)), 'COMPLETED');
  });
});
