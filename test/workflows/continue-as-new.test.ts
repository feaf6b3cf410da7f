// A run of many pages continues as new when Temporal suggests a fresh history, but only once the pages under way
// have drained: a page waiting on a person keeps its approval (and the run its place) across the continue-as-new,
// and the next execution goes on from the next page with the failures counted so far. The Java test server never
// suggests continue-as-new, so this runs on the project's dev server (real time), told to suggest it after a few
// dozen events instead of 4,096.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { agentRunV3 } from '../../workflows/agent-run';
import { pageWorkflowId, progressQuery, resumeSignal } from '../../workflows/contracts';
import { decideUpdate, pendingApprovalsQuery } from '../../workflows/contracts';
import { waitFor } from '../../scripts/supervisor';
import { devServerEnv, recordingActivities, runPlan, workflowWorker } from '../support/workflow-env';

const suggestAfterEvents = 40;

describe('workflows: continue-as-new with a pending approval (dev server)', function () {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await devServerEnv({ 'limit.historyCount.suggestContinueAsNew': suggestAfterEvents });
  });
  after(async () => {
    await env?.teardown();
  });

  it('drains the page waiting on an approval, then continues as new from the next page', async () => {
    const advanced = new Set<number>();
    const fakes = recordingActivities({
      openRun: () => ({ plan: runPlan({ total: 3_000, pageWindow: 1 }) }),
      // Each page has one item: the first page's waits on an approval, the others go straight to their step.
      advancePage: ({ fromSeq }) => {
        if (advanced.has(fromSeq)) return [];
        advanced.add(fromSeq);
        return [fromSeq === 0 ? { seq: 0, nodeId: 'gate', approvalId: 'ap-0' } : { seq: fromSeq, nodeId: 'send' }];
      },
      executeStep: ({ seq }) => (seq === 0 ? 'failed' : 'advanced'),
      recordDecision: () => undefined,
      closeRun: () => ({ status: 'completed', chained: [] }),
    });
    const { worker, taskQueue } = await workflowWorker(env, fakes.activities);
    const runId = randomUUID();
    const workflowId = `run-${runId}`;
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(agentRunV3, { taskQueue, workflowId, args: [{ runId }] });
      const first = (await handle.describe()).runId;
      const page0 = env.client.workflow.getHandle(pageWorkflowId(workflowId, 0));
      await waitFor(
        'the approval pending',
        async () => assert.deepEqual(await page0.query(pendingApprovalsQuery), ['ap-0']),
        60_000,
      );

      // Signals that change nothing (a resume of a run not paused) grow the history past the suggestion.
      for (let i = 0; i < suggestAfterEvents; i++) await handle.signal(resumeSignal);
      await waitFor(
        'continue-as-new suggested',
        async () => {
          const { events } = await handle.fetchHistory();
          assert.ok(events?.some((e) => e.workflowTaskStartedEventAttributes?.suggestContinueAsNew));
        },
        60_000,
      );
      // The suggestion does not cut the page waiting on a person short.
      const waiting = await handle.describe();
      assert.equal(waiting.runId, first);
      assert.equal(waiting.status.name, 'RUNNING');
      assert.deepEqual(await page0.query(pendingApprovalsQuery), ['ap-0']);

      await page0.executeUpdate(decideUpdate, { args: [{ approvalId: 'ap-0', approve: true, by: 'ana' }] });
      assert.equal(await handle.result(), 'completed');

      const firstRun = env.client.workflow.getHandle(workflowId, first);
      assert.equal((await firstRun.describe()).status.name, 'CONTINUED_AS_NEW');
      const last = env.client.workflow.getHandle(workflowId);
      assert.notEqual((await last.describe()).runId, first);
      assert.deepEqual(await last.query(progressQuery), { pages: 3, pagesDone: 3, failedItems: 1 });
    });
    // Every page ran once, the first with its reviewer's decision; the run closed once.
    assert.deepEqual(
      fakes.inputsOf('executeStep').map((s) => [s.seq, s.decision?.by]),
      [
        [0, 'ana'],
        [1_000, undefined],
        [2_000, undefined],
      ],
    );
    assert.equal(fakes.inputsOf('closeRun').length, 1);
  });
});
