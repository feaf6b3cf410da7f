// GET /readyz is ready only once a worker polls the run task queue: `npm start` prints "Cadre is running" when it is
// (scripts/start.ts), so the first run after the banner does not wait in the queue for a worker still starting.
import assert from 'node:assert/strict';
import os from 'node:os';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { readinessChecks, workerPolls } from '../../api/readiness';
import { createHarness, spawnWorker, startApi, type Harness } from '../support/harness';

describe('readiness (/readyz) waits for a worker polling the task queue', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };

  before(async () => {
    h = await createHarness({ worker: false }); // the queue has no worker yet
    api = await startApi(h, {
      ready: readinessChecks({ knex: h.stack.knex, temporal: h.client, taskQueue: h.temporalConfig.taskQueue }),
    });
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const readyz = async () => {
    const res = await fetch(`${api.url}/readyz`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('answers 503 naming the missing worker while none polls, and 200 once one does', async () => {
    const before = await readyz();
    assert.equal(before.status, 503);
    assert.equal(before.body.status, 'unavailable');
    assert.deepEqual(before.body.checks, { postgres: true, temporal: true, worker: false });
    assert.match(
      String(before.body.detail),
      new RegExp(`no worker polls the task queue "${h.temporalConfig.taskQueue}"`),
    );

    const connection = await NativeConnection.connect({ address: h.temporalConfig.address });
    const worker = await Worker.create({
      connection,
      namespace: h.temporalConfig.namespace,
      taskQueue: h.temporalConfig.taskQueue,
      workflowBundle: h.stack.workflowBundle,
      activities: createActivities({ knex: h.stack.knex, config: h.config, temporal: h.client }),
    });
    const running = worker.run();
    try {
      let after = await readyz();
      for (let i = 0; i < 600 && after.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        after = await readyz();
      }
      assert.equal(after.status, 200, JSON.stringify(after.body));
      assert.deepEqual(after.body, { status: 'ready', checks: { postgres: true, temporal: true, worker: true } });
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
    }
  });

  it('scripts/worker.ts says it polls once Temporal lists it among the pollers (npm start lowers its priority then)', async () => {
    const child = spawnWorker(h);
    try {
      let output = '';
      child.stdout!.on('data', (d) => (output += d));
      const said = new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', () => output.includes('worker polling task queue') && resolve());
        child.once('exit', (code) => reject(new Error(`the worker exited (${code}): ${output}`)));
      });
      await said;
      // Its identity is the SDK's default: pid@host.
      assert.ok(await workerPolls(h.client, h.temporalConfig.taskQueue, `${child.pid}@${os.hostname()}`));
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(undefined)));
    }
  });
});
