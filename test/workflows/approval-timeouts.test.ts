// Approval timeouts on the time-skipping test server: an approval left undecided for the agent's
// approval_timeout_seconds (24 h by default) ends as its policy says (rejected, approved, or escalated to wait on
// for a person), at the 24th hour and not before, without the test waiting a day. Real workflow bundle, activities
// replaced by functions that record their calls.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { agentRunV3 } from '../../workflows/agent-run';
import { decideUpdate, pendingApprovalsQuery } from '../../workflows/contracts';
import type { RunPlan } from '../../activities/run-lifecycle';
import { waitFor } from '../../scripts/supervisor';
import {
  recordingActivities,
  runPlan,
  scheduledActivities,
  skipTime,
  timeSkippingEnv,
  workflowWorker,
  type FakeActivities,
} from '../support/workflow-env';

describe('workflows: approval timeouts (time skipping)', function () {
  // A server per test: skipped time is the whole server's, and an abandoned child left behind by one test (the
  // batch's run) can keep the Java test server from skipping time for the next.
  let env: TestWorkflowEnvironment;
  beforeEach(async () => {
    env = await timeSkippingEnv();
  });
  afterEach(async () => {
    await env?.teardown();
  });

  /** A run of one item that stops at an approval node (`approvalId`), or at its model's tool calls (`awaiting`). */
  function gatedRun(
    plan: Partial<RunPlan>,
    gate: { approvalId?: string; awaiting?: string[] },
    more: FakeActivities = {},
  ) {
    let stepped = 0;
    return recordingActivities({
      openRun: () => ({
        plan: runPlan(plan),
        actions: [{ seq: 0, nodeId: gate.awaiting ? 'llm' : 'gate', approvalId: gate.approvalId }],
      }),
      // A model step first asks for its tool calls, then runs with the decisions.
      executeStep: () => (gate.awaiting && stepped++ === 0 ? { awaiting: gate.awaiting } : 'advanced'),
      recordDecision: () => undefined,
      advancePage: () => [],
      closeRun: ({ cancelled }) => ({ status: cancelled ? 'cancelled' : 'completed', chained: [] }),
      ...more,
    });
  }

  async function startRun(taskQueue: string): Promise<WorkflowHandle<typeof agentRunV3>> {
    const runId = randomUUID();
    return env.client.workflow.start(agentRunV3, { taskQueue, workflowId: `run-${runId}`, args: [{ runId }] });
  }

  const pendingOf = (handle: WorkflowHandle, ids: string[]) =>
    waitFor(
      `approvals ${ids.join(', ')} pending`,
      async () => assert.deepEqual((await handle.query(pendingApprovalsQuery)).sort(), ids),
      60_000,
    );

  for (const [policy, approved] of [
    ['reject', false],
    ['approve', true],
  ] as const) {
    it(`on_approval_timeout "${policy}": after 24 h the policy decides, and the item goes on with that decision`, async () => {
      const fakes = gatedRun({ onApprovalTimeout: policy }, { approvalId: 'ap-1' });
      const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
      await worker.runUntil(async () => {
        const handle = await startRun(taskQueue);
        await pendingOf(handle, ['ap-1']);

        await skipTime(env, '23 hours');
        assert.deepEqual(await handle.query(pendingApprovalsQuery), ['ap-1'], 'still waiting before the timeout');
        assert.deepEqual(fakes.inputsOf('recordDecision'), []);

        await skipTime(env, '1 hour');
        assert.equal(await handle.result(), 'completed');
      });
      const decision = { approved, by: 'policy', reason: 'approval timed out' };
      assert.deepEqual(fakes.inputsOf('recordDecision'), [{ approvalId: 'ap-1', decision, status: 'timed_out' }]);
      assert.deepEqual(
        fakes.inputsOf('executeStep').map((s) => s.decision),
        [decision],
      );
    });
  }

  it('on_approval_timeout "escalate": after 24 h the approval is escalated and waits, for days, for a person', async () => {
    const fakes = gatedRun({ onApprovalTimeout: 'escalate' }, { approvalId: 'ap-1' });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const handle = await startRun(taskQueue);
      await pendingOf(handle, ['ap-1']);

      await skipTime(env, '24 hours');
      await waitFor('the escalation', async () => assert.equal(fakes.inputsOf('recordDecision').length, 1), 60_000);
      assert.deepEqual(fakes.inputsOf('recordDecision'), [
        {
          approvalId: 'ap-1',
          decision: { approved: false, by: 'policy', reason: 'approval timed out: escalated' },
          status: 'escalated',
        },
      ]);

      // An escalated approval has no second timeout: a week later it still waits, and the step has not run.
      await skipTime(env, '7 days');
      assert.deepEqual(await handle.query(pendingApprovalsQuery), ['ap-1']);
      assert.ok(!(await scheduledActivities(handle)).includes('executeStep'));

      await handle.executeUpdate(decideUpdate, { args: [{ approvalId: 'ap-1', approve: true, by: 'ana' }] });
      // The decision is taken once: a second one is refused.
      await assert.rejects(
        handle.executeUpdate(decideUpdate, { args: [{ approvalId: 'ap-1', approve: false, by: 'bo' }] }),
        (err: unknown) =>
          err instanceof WorkflowUpdateFailedError && /already decided/.test(String(err.cause?.message)),
      );
      assert.equal(await handle.result(), 'completed');
    });
    assert.deepEqual(fakes.inputsOf('recordDecision')[1], {
      approvalId: 'ap-1',
      decision: { approved: true, by: 'ana' },
      status: 'approved',
    });
    assert.deepEqual(
      fakes.inputsOf('executeStep').map((s) => s.decision?.by),
      ['ana'],
    );
  });

  it('a decision before the timeout stands: the policy never decides it', async () => {
    const fakes = gatedRun({ onApprovalTimeout: 'reject' }, { approvalId: 'ap-1' });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const handle = await startRun(taskQueue);
      await pendingOf(handle, ['ap-1']);
      await skipTime(env, '20 hours');
      await handle.executeUpdate(decideUpdate, { args: [{ approvalId: 'ap-1', approve: true, by: 'ana' }] });
      assert.equal(await handle.result(), 'completed');
      await skipTime(env, '2 days');
    });
    assert.deepEqual(
      fakes.inputsOf('recordDecision').map((d) => d.status),
      ['approved'],
    );
    assert.deepEqual(
      fakes.inputsOf('executeStep').map((s) => s.decision?.approved),
      [true],
    );
  });

  it("a model step's tool calls time out each under the policy, and the step runs again with those decisions", async () => {
    const fakes = gatedRun(
      { onApprovalTimeout: 'reject', approvalTimeoutSeconds: 3_600 },
      { awaiting: ['m-1', 'm-2'] },
    );
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const handle = await startRun(taskQueue);
      await pendingOf(handle, ['m-1', 'm-2']);
      await skipTime(env, '1 hour');
      assert.equal(await handle.result(), 'completed');
    });
    const timedOut = { approved: false, by: 'policy', reason: 'approval timed out' };
    assert.deepEqual(
      fakes
        .inputsOf('recordDecision')
        .map((d) => [d.approvalId, d.status])
        .sort(),
      [
        ['m-1', 'timed_out'],
        ['m-2', 'timed_out'],
      ],
    );
    const [first, again] = fakes.inputsOf('executeStep');
    assert.equal(first.decisions, undefined);
    assert.deepEqual(again.decisions, { 'm-1': timedOut, 'm-2': timedOut });
  });
});
