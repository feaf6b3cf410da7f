// Fairness under bursts: every run carries its agent as Temporal's fairness key (with matching.enableFairness on
// the server), so a backlog of one agent's runs does not make another agent's run wait behind all of it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { createHarness, createLiveAgent, createTestWorkspace, startTestRun, type Harness } from '../support/harness';

const burst = 300;

/** Waits until the workflow task queue's partitions (the dev server's four) hold at least `count` tasks. */
async function backlogOf(h: Harness, count: number) {
  const queue = h.temporalConfig.taskQueue;
  const partitions = [queue, ...[1, 2, 3].map((n) => `/_sys/${queue}/${n}`)];
  for (;;) {
    let total = 0;
    for (const name of partitions) {
      const { taskQueueStatus } = await h.client.workflowService.describeTaskQueue({
        namespace: h.temporalConfig.namespace,
        taskQueue: { name, kind: 1 }, // normal
        taskQueueType: 1, // workflow
        includeTaskQueueStatus: true,
      });
      total += Number(taskQueueStatus?.backlogCountHint ?? 0);
    }
    if (total >= count) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('fairness between agents under a burst', function () {
  this.timeout(300_000);
  let h: Harness;
  after(() => h?.close());

  it(`a run of another agent, started after a backlog of ${burst} runs of one agent, ends before most of them`, async () => {
    h = await createHarness({ worker: false }); // the worker comes once the backlog is there, as in a burst
    const spec = JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples/route-csv-rows.json'), 'utf8'));
    const busyWs = (await createTestWorkspace(h)).workspace.id;
    const quietWs = (await createTestWorkspace(h)).workspace.id;
    const busy = await createLiveAgent(h, busyWs, spec);
    const quiet = await createLiveAgent(h, quietWs, spec);
    const input = 'invoice,vendor,amount\nINV-1,Acme,120.50';
    for (let i = 0; i < burst; i++) await startTestRun(h, busyWs, busy.id, input);
    const other = await startTestRun(h, quietWs, quiet.id, input);

    // A start returns once the run's workflow exists; its first task reaches the task queue a moment later (the
    // server's transfer queue), in arrival order. The worker comes once all of them are there, so what is measured
    // is the task queue's dispatch order and not how far that hand-over lagged on a busy machine.
    await backlogOf(h, burst + 1);
    const connection = await NativeConnection.connect({ address: h.temporalConfig.address });
    const worker = await Worker.create({
      connection,
      namespace: h.temporalConfig.namespace,
      taskQueue: h.temporalConfig.taskQueue,
      workflowBundle: h.stack.workflowBundle,
      activities: createActivities({ knex: h.stack.knex, config: h.config, temporal: h.client }),
      ...h.temporalConfig.worker,
    });
    await worker.runUntil(async () => {
      for (;;) {
        const { open } = await h.stack
          .knex('runs')
          .whereIn('agent_id', [busy.id, quiet.id])
          .first(h.stack.knex.raw(`count(*) filter (where ended_at is null)::int as open`));
        if (open === 0) break;
        await new Promise((r) => setTimeout(r, 200));
      }
    });
    await connection.close();

    const { ended_at: otherEnded } = await h.stack.knex('runs').where({ id: other.id }).first('ended_at');
    const [{ before }] = await h.stack
      .knex('runs')
      .where({ agent_id: busy.id })
      .select(h.stack.knex.raw(`count(*) filter (where ended_at < ?)::int as before`, [otherEnded]));
    // In arrival order (no fairness) it would end after all of them.
    assert.ok(before < burst / 2, `the other agent's run ended after ${before} of the ${burst} earlier runs`);
  });
});
