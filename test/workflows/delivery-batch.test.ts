// A micro-batching trigger's window on the time-skipping test server: the batch closes when its window passes (and
// not before), or at once when it is full; its deliveries then become one run, started as a child that outlives the
// batch workflow. Real workflow bundle, activities replaced by functions that record their calls.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { deliveryBatch } from '../../workflows/delivery-batch';
import { batchFullSignal, batchWorkflowId } from '../../workflows/contracts';
import { currentRunType, runWorkflowId } from '../../model/run-identity';
import { waitFor } from '../../scripts/supervisor';
import { recordingActivities, runPlan, skipTime, timeSkippingEnv, workflowWorker } from '../support/workflow-env';

const hour = 3_600_000;

describe('workflows: delivery batch window (time skipping)', function () {
  // A server per test: skipped time is the whole server's, and an abandoned child left behind by one test (the
  // batch's run) can keep the Java test server from skipping time for the next.
  let env: TestWorkflowEnvironment;
  beforeEach(async () => {
    env = await timeSkippingEnv();
  });
  afterEach(async () => {
    await env?.teardown();
  });

  /** The batch opens run `runId`; that run (the child) ends at its opening. */
  function batchActivities(opened: { skipped: string } | { id: string }) {
    return recordingActivities({
      openBatchRun: () =>
        'skipped' in opened ? opened : { ...opened, workspace_id: 'ws-1', agent_id: 'agent-1', trigger: 'webhook' },
      openRun: () => ({ plan: runPlan(), ended: { status: 'completed', chained: [] } }),
    });
  }

  const startBatch = (taskQueue: string, windowMs: number) => {
    const batchId = randomUUID();
    return env.client.workflow.start(deliveryBatch, {
      taskQueue,
      workflowId: batchWorkflowId(batchId),
      args: [{ batchId, windowMs }],
    });
  };

  it('closes when its window passes, not before, and starts one run of its deliveries', async () => {
    const runId = randomUUID();
    const fakes = batchActivities({ id: runId });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const batch = await startBatch(taskQueue, 2 * hour);
      await skipTime(env, '119 minutes');
      assert.equal((await batch.describe()).status.name, 'RUNNING');
      assert.deepEqual(fakes.inputsOf('openBatchRun'), [], 'the batch is still open');

      await skipTime(env, '1 minute');
      assert.equal(await batch.result(), runId);
      // The run is an abandoned child: it goes on (here: ends) on its own after the batch workflow has closed.
      const run = env.client.workflow.getHandle(runWorkflowId(runId));
      assert.equal(await run.result(), 'completed');
      assert.equal((await run.describe()).type, currentRunType, 'a new batch starts the current run type');
    });
    assert.equal(fakes.inputsOf('openBatchRun').length, 1);
    assert.deepEqual(fakes.inputsOf('openRun'), [{ runId }]);
  });

  it('closes at once when it is full, without waiting out its window', async () => {
    const runId = randomUUID();
    const fakes = batchActivities({ id: runId });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const batch = await startBatch(taskQueue, 24 * hour);
      const openedAt = await env.currentTimeMs();
      await skipTime(env, '1 hour');
      await batch.signal(batchFullSignal);
      // Awaiting the result would skip the rest of the window, had the signal not closed the batch.
      assert.equal(await batch.result(), runId);
      assert.ok((await env.currentTimeMs()) - openedAt < 2 * hour, 'the batch closed before its window passed');
      await waitFor('the batch run', async () => assert.deepEqual(fakes.inputsOf('openRun'), [{ runId }]), 60_000);
    });
    assert.equal(fakes.inputsOf('openBatchRun').length, 1);
  });

  it('a batch with nothing to run (deliveries gone, trigger deleted) ends without a run', async () => {
    const fakes = batchActivities({ skipped: 'no deliveries' });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    await worker.runUntil(async () => {
      const batch = await startBatch(taskQueue, hour);
      assert.equal(await batch.result(), 'skipped: no deliveries');
    });
    assert.deepEqual(
      fakes.calls.map((c) => c.name),
      ['openBatchRun'],
    );
  });
});
