// Cancelling, pausing and resuming a run, at the workflow level on the time-skipping test server: a cancelled run
// is stored cancelled and its execution (page children included) closes Canceled; a paused run starts nothing new
// (no step, no page) however long the pause, while its approvals can still be decided; the resume carries on.
// What a workflow has started is read from its recorded history, so no assertion races a worker.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { agentRunV3 } from '../../workflows/agent-run';
import { pageWorkflowId, pauseSignal, resumeSignal } from '../../workflows/contracts';
import { decideUpdate, pendingApprovalsQuery } from '../../workflows/contracts';
import type { StepAction } from '../../activities/page-walk';
import type { RunPlan } from '../../activities/run-lifecycle';
import { waitFor } from '../../scripts/supervisor';
import {
  recordingActivities,
  runPlan,
  scheduledActivities,
  skipTime,
  timeSkippingEnv,
  workflowWorker,
} from '../support/workflow-env';

describe('workflows: cancel, pause and resume (time skipping)', function () {
  // A server per test: skipped time is the whole server's.
  let env: TestWorkflowEnvironment;
  beforeEach(async () => {
    env = await timeSkippingEnv();
  });
  afterEach(async () => {
    await env?.teardown();
  });

  /**
   * A run whose opening hands over `firstActions` (a run of one page), or whose pages each start with
   * `pageActions(fromSeq)` (a run of several); every step advances its item, and a page has nothing after.
   */
  function runActivities(
    plan: Partial<RunPlan>,
    opts: { firstActions?: StepAction[]; pageActions?: (fromSeq: number) => StepAction[] },
  ) {
    const advanced = new Set<number>();
    return recordingActivities({
      openRun: () => ({ plan: runPlan(plan), actions: opts.firstActions }),
      advancePage: ({ fromSeq }) => {
        if (advanced.has(fromSeq)) return [];
        advanced.add(fromSeq);
        return opts.pageActions?.(fromSeq) ?? [];
      },
      executeStep: () => 'advanced',
      recordDecision: () => undefined,
      closeRun: ({ cancelled }) => ({ status: cancelled ? 'cancelled' : 'completed', chained: [] }),
    });
  }

  const newRun = () => {
    const runId = randomUUID();
    return { runId, workflowId: `run-${runId}`, args: [{ runId }] as [{ runId: string }] };
  };

  const pending = (handle: WorkflowHandle, ids: string[]) =>
    waitFor(
      `approvals ${ids.join(', ')} pending in ${handle.workflowId}`,
      async () => assert.deepEqual(await handle.query(pendingApprovalsQuery), ids),
      60_000,
    );

  /** The history holds a signal of this name (the workflow task that took it may still be under way). */
  const signalled = (handle: WorkflowHandle, name: string) =>
    waitFor(
      `signal ${name} in ${handle.workflowId}`,
      async () => {
        const { events } = await handle.fetchHistory();
        assert.ok(events?.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name));
      },
      60_000,
    );

  it('a cancelled run is stored cancelled and closes Canceled, its waiting step never run', async () => {
    const fakes = runActivities({}, { firstActions: [{ seq: 0, nodeId: 'gate', approvalId: 'ap-1' }] });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    const run = newRun();
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(agentRunV3, { taskQueue, ...run });
      await pending(handle, ['ap-1']);
      await handle.cancel();
      await assert.rejects(
        handle.result(),
        (err: unknown) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure,
      );
      assert.equal((await handle.describe()).status.name, 'CANCELLED');
      assert.ok(!(await scheduledActivities(handle)).includes('executeStep'));
    });
    assert.deepEqual(fakes.inputsOf('closeRun'), [{ runId: run.runId, cancelled: true }]);
  });

  it('cancelling a run of several pages cancels the pages under way and starts no other', async () => {
    const fakes = runActivities(
      { total: 2_500, pageWindow: 2, concurrency: 2 },
      { pageActions: (fromSeq) => [{ seq: fromSeq, nodeId: 'gate', approvalId: `ap-${fromSeq}` }] },
    );
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    const run = newRun();
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(agentRunV3, { taskQueue, ...run });
      const pages = [0, 1].map((p) => env.client.workflow.getHandle(pageWorkflowId(run.workflowId, p)));
      await pending(pages[0], ['ap-0']);
      await pending(pages[1], ['ap-1000']);
      await handle.cancel();
      await assert.rejects(handle.result(), (err: unknown) => err instanceof WorkflowFailedError);
      assert.equal((await handle.describe()).status.name, 'CANCELLED');
      for (const page of pages) assert.equal((await page.describe()).status.name, 'CANCELLED');
    });
    assert.deepEqual(
      fakes
        .inputsOf('advancePage')
        .map((a) => a.fromSeq)
        .sort((a, b) => a - b),
      [0, 1_000],
      'the third page never started',
    );
    assert.deepEqual(
      fakes.inputsOf('closeRun').map((c) => c.cancelled),
      [true],
    );
  });

  it('a run paused from its start starts nothing (not even its page), for a day, until it is resumed', async () => {
    const fakes = runActivities({}, { firstActions: [{ seq: 0, nodeId: 'send' }] });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.signalWithStart(agentRunV3, {
        taskQueue,
        ...newRun(),
        signal: pauseSignal,
      });
      // The opening (a local activity) is recorded with what the same workflow task started after it.
      await waitFor(
        'the opening recorded',
        async () => {
          const { events } = await handle.fetchHistory();
          assert.ok(events?.some((e) => e.markerRecordedEventAttributes));
        },
        60_000,
      );
      await skipTime(env, '1 day');
      assert.deepEqual(await scheduledActivities(handle), [], 'nothing started while paused');

      await handle.signal(resumeSignal);
      assert.equal(await handle.result(), 'completed');
    });
    assert.deepEqual(
      fakes.inputsOf('executeStep').map((s) => s.seq),
      [0],
    );
  });

  it('an approval decided while the run is paused is recorded at once, and its step waits for the resume', async () => {
    const fakes = runActivities({}, { firstActions: [{ seq: 0, nodeId: 'gate', approvalId: 'ap-1' }] });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(agentRunV3, { taskQueue, ...newRun() });
      await pending(handle, ['ap-1']);
      await handle.signal(pauseSignal);
      // The workflow task that takes the decision would also start the step, had the pause not held it.
      await handle.executeUpdate(decideUpdate, { args: [{ approvalId: 'ap-1', approve: true, by: 'ana' }] });
      assert.deepEqual(await scheduledActivities(handle), ['recordDecision']);
      await skipTime(env, '1 day');
      assert.deepEqual(await scheduledActivities(handle), ['recordDecision']);

      await handle.signal(resumeSignal);
      assert.equal(await handle.result(), 'completed');
    });
    assert.deepEqual(
      fakes.inputsOf('executeStep').map((s) => s.decision),
      [{ approved: true, by: 'ana' }],
    );
  });

  it("a pause reaches the run's pages: the page under way starts no step and the next page waits for the resume", async () => {
    const fakes = runActivities(
      { total: 2_000, pageWindow: 1 },
      { pageActions: (fromSeq) => [{ seq: fromSeq, nodeId: 'gate', approvalId: `ap-${fromSeq}` }] },
    );
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    const run = newRun();
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(agentRunV3, { taskQueue, ...run });
      const page0 = env.client.workflow.getHandle(pageWorkflowId(run.workflowId, 0));
      await pending(page0, ['ap-0']);
      await handle.signal(pauseSignal);
      await signalled(page0, 'hold');
      await page0.executeUpdate(decideUpdate, { args: [{ approvalId: 'ap-0', approve: true, by: 'ana' }] });
      await skipTime(env, '1 day');
      assert.deepEqual(await scheduledActivities(page0), ['advancePage', 'recordDecision']);
      assert.deepEqual(
        fakes.inputsOf('advancePage').map((a) => a.fromSeq),
        [0],
      );

      await handle.signal(resumeSignal);
      const page1 = env.client.workflow.getHandle(pageWorkflowId(run.workflowId, 1));
      await pending(page1, ['ap-1000']);
      await page1.executeUpdate(decideUpdate, { args: [{ approvalId: 'ap-1000', approve: true, by: 'ana' }] });
      assert.equal(await handle.result(), 'completed');
    });
    assert.deepEqual(
      fakes.inputsOf('executeStep').map((s) => s.seq),
      [0, 1_000],
    );
  });
});
