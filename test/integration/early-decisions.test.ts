// A run of one page takes people's decisions from its first moment: its opening activity may already stop an item
// for a person, and a reviewer (or an API client polling the approvals) can decide before that activity has even
// reported back. An update or query that reaches a workflow before its handler is registered is refused, so the
// run registers them before its first activity. Here the opening cannot run at all (no worker has the activities
// yet) while the run is asked what it waits on; then a full worker comes and the approval is decided at once.
// That is agentRunV2, whose opening is an activity; agentRunV3's opening is a local activity, run by the worker
// that holds the workflow task, and its approval is decided the moment it exists too.
import assert from 'node:assert/strict';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { runWorkflowId, runWorkflowOptions } from '../../model/run-identity';
import { openRun } from '../../db/open-run';
import type { agentRunV2 } from '../../workflows/agent-run';
import { decideUpdate, pendingApprovalsQuery } from '../../workflows/contracts';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';

describe('a run of one page takes decisions from its first moment', function () {
  this.timeout(120_000);
  let h: Harness;
  let connection: NativeConnection;

  before(async () => {
    h = await createHarness({ worker: false });
    connection = await NativeConnection.connect({ address: h.temporalConfig.address });
  });
  after(async () => {
    await connection?.close();
    await h?.close();
  });

  const worker = (activities: object) =>
    Worker.create({
      connection,
      namespace: h.temporalConfig.namespace,
      taskQueue: h.temporalConfig.taskQueue,
      workflowBundle: h.stack.workflowBundle,
      activities,
    });

  const approveEach = async () => {
    const { workspace } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'approve each',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'gate' },
        { kind: 'approval', id: 'gate', message: 'Pay {{amount}}?', next: null },
      ],
    });
    return { workspace, agent };
  };
  const activities = () => createActivities({ knex: h.stack.knex, config: h.config, temporal: h.client });
  /** Decides the run's approval the moment its row exists, before the opening that wrote it may have reported back. */
  const decideAtOnce = async (runId: string) => {
    let approval: { id: string } | undefined;
    while (!(approval = await h.stack.knex('approvals').where({ run_id: runId }).first('id')))
      await new Promise((r) => setTimeout(r, 5));
    await h.client.workflow.getHandle(runWorkflowId(runId)).executeUpdate(decideUpdate, {
      args: [{ approvalId: approval.id, approve: true, by: 'quick@reviewer.test' }],
    });
    const done = await waitForRun(h, runId);
    assert.equal(done.status, 'completed');
    assert.equal(done.done, 1);
  };

  it('agentRunV2 answers what it waits on while its opening has not run, and takes a decision the moment the approval exists', async () => {
    const { workspace, agent } = await approveEach();
    const opened = await openRun(h.stack.knex, { workspace, agent, input: '[{"amount":5000}]', trigger: 'test' });
    const run = opened.outcome === 'created' ? opened.run : assert.fail(opened.outcome);
    const handle = await h.client.workflow.start<typeof agentRunV2>('agentRunV2', {
      ...runWorkflowOptions(run),
      taskQueue: h.temporalConfig.taskQueue,
    });

    // Workflows only: the opening activity is scheduled and cannot run.
    const workflowsOnly = await worker({});
    const pending = await workflowsOnly.runUntil(async () => {
      for (;;) {
        const history = await handle.fetchHistory();
        if (history.events?.some((e) => e.activityTaskScheduledEventAttributes)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      return handle.query(pendingApprovalsQuery);
    });
    assert.deepEqual(pending, [], 'the run answers before its opening has run');

    const full = await worker(activities());
    await full.runUntil(decideAtOnce(run.id));
  });

  it('agentRunV3 takes a decision the moment the approval exists', async () => {
    const { workspace, agent } = await approveEach();
    const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify([{ amount: 5000 }]));
    const full = await worker(activities());
    await full.runUntil(decideAtOnce(run.id));
  });
});
