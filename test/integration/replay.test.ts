// Determinism and visibility: recorded histories of real runs replay against the current workflow code, and
// Temporal's visibility finds an agent's runs by the search attributes every run carries.
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { decideUpdate } from '../../workflows/run-page';
import { pageWorkflowId } from '../../workflows/agent-run';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';

describe('determinism and visibility', () => {
  let h: Harness;
  let ws: string;
  let agentId: string;
  let runId: string;

  before(async () => {
    h = await createHarness();
    ws = (await createTestWorkspace(h)).workspace.id;
    agentId = (
      await createLiveAgent(h, ws, {
        name: 'replay',
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'route' },
          {
            kind: 'branch',
            id: 'route',
            branches: [{ when: { field: 'amount', op: 'gt', value: 100 }, next: 'gate' }],
            otherwise: 'count',
          },
          { kind: 'approval', id: 'gate', message: 'ok {{amount}}?', next: 'count' },
          {
            kind: 'tool',
            id: 'count',
            tool: 'state.increment',
            arguments: { key: 'n', by: '{{amount}}' },
            next: 'out',
          },
          { kind: 'output', id: 'out', format: 'json' },
        ],
      })
    ).id;
    const run = await startTestRun(h, ws, agentId, JSON.stringify([{ amount: 5 }, { amount: 500 }, { amount: 7 }]));
    runId = run.id;
    await waitForRun(h, runId, (r) => r.status === 'needs_review');
    let approval;
    while (!(approval = await h.stack.knex('approvals').where({ run_id: runId }).first()))
      await new Promise((r) => setTimeout(r, 100));
    await h.client.workflow
      .getHandle(approval.workflow_id)
      .executeUpdate(decideUpdate, { args: [{ approvalId: approval.id, approve: true, by: 'r' }] });
    assert.equal((await waitForRun(h, runId)).status, 'completed');
  });
  after(() => h?.close());

  it('replays the recorded histories of a run and its page with the current workflow code', async () => {
    const ids = [`run-${runId}`, pageWorkflowId(`run-${runId}`, 0)];
    const histories = await Promise.all(
      ids.map(async (workflowId) => ({
        workflowId,
        history: await h.client.workflow.getHandle(workflowId).fetchHistory(),
      })),
    );
    let replayed = 0;
    for await (const result of Worker.runReplayHistories({ workflowBundle: h.stack.workflowBundle }, histories)) {
      assert.equal(result.error, undefined, `${result.workflowId} did not replay: ${result.error}`);
      replayed++;
    }
    assert.equal(replayed, 2);
  });

  it("finds an agent's runs in Temporal visibility by CadreAgentId, CadreWorkspaceId and CadreTrigger", async () => {
    const query = `CadreAgentId = '${agentId}' AND CadreWorkspaceId = '${ws}' AND CadreTrigger = 'manual'`;
    let found: string[] = [];
    for (let i = 0; i < 50 && found.length === 0; i++) {
      found = [];
      for await (const w of h.client.workflow.list({ query })) found.push(w.workflowId);
      if (found.length === 0) await new Promise((r) => setTimeout(r, 200)); // visibility is eventually consistent
    }
    assert.deepEqual(found, [`run-${runId}`]);
  });
});
