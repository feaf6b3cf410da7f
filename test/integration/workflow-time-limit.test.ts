// With the embedded Temporal, workflows run on the worker's main thread (temporal.config.ts), beside the activities
// and, under `npm start`, the API. A workflow task stuck in an endless loop must still be cut off after the SDK's 5 s limit and fail, so the
// process goes on serving, as it did when workflows had a thread of their own.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadTemporalConfig } from '../../temporal.config';
import { createHarness, type Harness } from '../support/harness';

describe('a workflow task that never yields', function () {
  this.timeout(120_000);
  let h: Harness;

  before(async () => {
    h = await createHarness({ worker: false });
  });
  after(async () => h?.close());

  it('fails its workflow task after the time limit, and the worker keeps running', async () => {
    const taskQueue = `spin-${randomUUID()}`;
    const connection = await NativeConnection.connect({ address: h.temporalConfig.address });
    const worker = await Worker.create({
      connection,
      namespace: h.temporalConfig.namespace,
      taskQueue,
      workflowsPath: require.resolve('../fixtures/workflows/spin'),
      // The same-thread settings `npm start` uses, whatever this suite's Temporal is.
      ...loadTemporalConfig({ ...process.env, CADRE_WORKFLOW_THREAD: 'false' }).worker,
    });
    const failure = await worker.runUntil(async () => {
      const handle = await h.client.workflow.start('spin', { taskQueue, workflowId: `spin-${randomUUID()}` });
      try {
        for (;;) {
          const events = (await handle.fetchHistory()).events ?? [];
          const failed = events.find((e) => e.workflowTaskFailedEventAttributes);
          if (failed) return failed.workflowTaskFailedEventAttributes!.failure?.message ?? '';
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        await handle.terminate('test over');
      }
    });
    await connection.close();
    assert.match(failure, /timed out/i);
  });
});
