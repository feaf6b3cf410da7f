// A run is answered once it is stored, before its workflow has started (services/runs/dispatch.ts). What makes that safe:
// a start that never lands (the web process died, Temporal was unreachable) is sent again by the start sweep, a run
// already started is never started twice, and a cancel finds its target even before the start lands.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  spawnWorker,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';
import { freePort } from '../support/ports';
import { openRun, runsAwaitingStart } from '../../db/open-run';
import { getAgent } from '../../db/agents';
import { runWorkflowId } from '../../model/run-identity';
import { ensureRunWorkflow, sweepUnstartedRuns } from '../../services/runs/dispatch';
import { startRun } from '../../services/runs/start';
import type { Workspace } from '../../db/workspaces';
import { createLogger } from '../../api/logger';

async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 20));
}

const spec = {
  name: 'pass invoices on',
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'out' },
    { kind: 'output', id: 'out', format: 'json', file_name: 'out.json' },
  ],
};

describe('runs answered before their workflow starts', () => {
  let h: Harness;
  let workspace: Workspace;
  let key: string;

  before(async () => {
    h = await createHarness();
    ({ workspace, key } = await createTestWorkspace(h));
  });
  after(async () => h?.close());
  // The database is the suite's: runs other files left waiting for a start are started (here) before each test,
  // so the counts below are this test's own.
  beforeEach(async () => {
    await sweep();
  });

  const deps = () => ({ knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig });
  /** Every run the web opened that waits for its start is sent again, whatever its age. */
  const sweep = () => sweepUnstartedRuns(deps(), { olderThanSeconds: 0 });
  const hasWorkflow = (runId: string) =>
    h.client.workflow
      .getHandle(runWorkflowId(runId))
      .describe()
      .then(
        () => true,
        (err) => {
          if (err instanceof WorkflowNotFoundError) return false;
          throw err;
        },
      );
  /** A run stored as the web stores it, as if its process died before the start was sent. */
  const openedOnly = async (agentId: string, startPending: boolean) => {
    const agent = (await getAgent(h.stack.knex, workspace.id, agentId))!;
    const opened = await openRun(h.stack.knex, { workspace, agent, input: '[{"n":1}]', trigger: 'api', startPending });
    assert.equal(opened.outcome, 'created');
    return opened.outcome === 'created' ? opened.run : assert.fail();
  };

  it('answers 202 while Temporal is unreachable; the sweep starts the run once it answers', async () => {
    const agent = await createLiveAgent(h, workspace.id, spec);
    // No retries: the start fails at once, as it does once the client's own retries are spent.
    const address = `127.0.0.1:${await freePort()}`;
    const nowhere = new Client({ connection: Connection.lazy({ address, interceptors: [] }) });
    const logged: string[] = [];
    const logger = createLogger('warn', 'web', { write: (line: string) => logged.push(line) });
    const api = await startApi(h, { temporal: nowhere, logger });
    try {
      const res = await fetch(`${api.url}/v1/agents/${agent.id}/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: '[{"invoice":"INV-1"}]' }),
      });
      assert.equal(res.status, 202);
      const run = (await res.json()) as { id: string; status: string };
      assert.equal(run.status, 'running');
      assert.equal(await hasWorkflow(run.id), false);
      await eventually(() => logged.some((l) => l.includes(run.id) && l.includes('did not start')));

      assert.equal(await sweep(), 1);
      assert.equal((await waitForRun(h, run.id)).status, 'completed');
      assert.deepEqual(
        (await items(h, run.id)).map((i) => i.data),
        [{ invoice: 'INV-1' }],
      );
      assert.equal(await sweep(), 0, 'a run that has begun is not started again');
    } finally {
      await api.close();
      await nowhere.connection.close();
    }
  });

  it('starts the run of a web process that died before sending its start, once', async () => {
    const agent = await createLiveAgent(h, workspace.id, spec);
    const run = await openedOnly(agent.id, true);
    assert.equal(await sweep(), 1);
    assert.equal(await sweep(), 0, 'a second pass finds it started (or begun)');
    assert.equal((await waitForRun(h, run.id)).status, 'completed');
    assert.equal((await items(h, run.id)).length, 1);
    const history = await h.client.workflow.getHandle(runWorkflowId(run.id)).fetchHistory();
    assert.equal(history.events!.filter((e) => e.workflowExecutionStartedEventAttributes).length, 1);
  });

  it('leaves alone the runs it does not start: recent ones, and those a workflow starts as its child', async () => {
    const agent = await createLiveAgent(h, workspace.id, spec);
    const child = await openedOnly(agent.id, false);
    const recent = await openedOnly(agent.id, true);
    assert.equal(await sweepUnstartedRuns(deps(), { olderThanSeconds: 3600 }), 0);
    assert.equal(await hasWorkflow(recent.id), false);
    assert.equal(await sweep(), 1);
    assert.equal(await hasWorkflow(child.id), false, "a child run is its parent's to start");
    assert.equal((await waitForRun(h, recent.id)).status, 'completed');
  });

  it('marks a run that waits behind a backlog as started, and never starts a run a second time', async () => {
    const agent = await createLiveAgent(h, workspace.id, spec);
    const run = await openedOnly(agent.id, true);
    // Started on a task queue no worker polls: begun in Temporal, not yet in the database.
    const idle = {
      ...deps(),
      temporalConfig: { ...h.temporalConfig, taskQueue: `${h.temporalConfig.taskQueue}-idle` },
    };
    assert.equal(await ensureRunWorkflow(idle, run), 'started');
    assert.equal(await sweep(), 0, 'found started');
    const row = await h.stack.knex('runs').where({ id: run.id }).first('start_pending', 'status', 'total');
    assert.deepEqual({ ...row }, { start_pending: false, status: 'running', total: 0 });
    await h.client.workflow.getHandle(runWorkflowId(run.id)).terminate('gone without storing its items');
    // Had the sweep not seen it started, a closed workflow is still not started a second time.
    await h.stack.knex('runs').where({ id: run.id }).update({ start_pending: true });
    assert.equal(await sweep(), 0);
    assert.equal((await h.client.workflow.getHandle(runWorkflowId(run.id)).describe()).status.name, 'TERMINATED');
  });
  it('marks a run whose start landed, so a backlog does not make the sweep send it again and again', async () => {
    const agent = await createLiveAgent(h, workspace.id, spec);
    // Its workflow begins on a task queue no worker polls: it waits, as behind a backlog, with no items stored.
    const idle = {
      ...deps(),
      temporalConfig: { ...h.temporalConfig, taskQueue: `${h.temporalConfig.taskQueue}-idle` },
    };
    const { run } = await startRun(idle, { workspace, agent, input: '[{"n":1}]', trigger: 'api' });
    const row = () => h.stack.knex('runs').where({ id: run.id }).first('start_pending', 'status', 'total');
    while ((await row()).start_pending) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual({ ...(await row()) }, { start_pending: false, status: 'running', total: 0 });
    assert.ok(await hasWorkflow(run.id));
    const awaiting = await runsAwaitingStart(h.stack.knex, 0, 1000);
    assert.ok(!awaiting.some((r) => r.id === run.id), 'the sweep no longer looks at it');
    await h.client.workflow.getHandle(runWorkflowId(run.id)).terminate('test over');
  });
});

describe('cancelling a run whose start has not landed', () => {
  let h: Harness;
  let workspace: Workspace;
  let key: string;
  let worker: ChildProcess | undefined;

  before(async () => {
    h = await createHarness({ worker: false }); // no worker until the cancel is in: nothing may run before it
    ({ workspace, key } = await createTestWorkspace(h));
  });
  after(async () => {
    if (worker?.exitCode === null) worker.kill('SIGKILL');
    await h?.close();
  });

  it('is accepted, and the run ends cancelled with nothing run', async () => {
    const agent = await createLiveAgent(h, workspace.id, spec);
    const opened = await openRun(h.stack.knex, {
      workspace,
      agent,
      input: '[{"n":1}]',
      trigger: 'api',
      startPending: true,
    });
    assert.equal(opened.outcome, 'created');
    const run = opened.outcome === 'created' ? opened.run : assert.fail();
    const api = await startApi(h);
    try {
      const res = await fetch(`${api.url}/v1/runs/${run.id}/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(res.status, 202);
    } finally {
      await api.close();
    }
    worker = spawnWorker(h);
    assert.equal((await waitForRun(h, run.id)).status, 'cancelled');
    assert.equal((await items(h, run.id)).length, 0);
  });
});
