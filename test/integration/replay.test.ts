// Determinism and visibility: recorded histories of real runs replay against the current workflow code (those of
// this code, and those recorded in test/fixtures/histories by earlier code, which runs still under way at an
// upgrade will replay), and Temporal's visibility finds an agent's runs by the search attributes every run carries.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { decideUpdate } from '../../workflows/contracts';
import { pageWorkflowId } from '../../workflows/contracts';
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

  /** Replays each history with the current workflow bundle; fails naming any that does not replay. */
  async function replay(histories: { workflowId: string; history: Awaited<ReturnType<typeof fetchHistory>> }[]) {
    let replayed = 0;
    for await (const result of Worker.runReplayHistories({ workflowBundle: h.stack.workflowBundle }, histories)) {
      assert.equal(result.error, undefined, `${result.workflowId} did not replay: ${result.error}`);
      replayed++;
    }
    return replayed;
  }
  const fetchHistory = (workflowId: string) => h.client.workflow.getHandle(workflowId).fetchHistory();

  it('replays the recorded history of a run (its one page runs in the run workflow) with the current code', async () => {
    // A run of one page has no page child: the approval was decided on the run's own workflow.
    await assert.rejects(fetchHistory(pageWorkflowId(`run-${runId}`, 0)), /not found/i);
    assert.equal(await replay([{ workflowId: `run-${runId}`, history: await fetchHistory(`run-${runId}`) }]), 1);
  });

  it('replays histories recorded before runs opened and closed in one activity each (runs under way at an upgrade)', async () => {
    // Workflow id → history, as `temporal workflow show -o json` printed them: a run waiting on an approval (its
    // page a child workflow), and a one-item run of set-based nodes.
    const file = path.join(__dirname, '../fixtures/histories/before-run-phases.json');
    const recorded = Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>);
    assert.equal(recorded.length, 4);
    const histories = recorded.map(([workflowId, json]) => ({ workflowId, history: historyFromJSON(json) }));
    assert.equal(await replay(histories), recorded.length);
  });

  it('replays agentRun histories recorded with the run-phases patch (runs started before agentRunV2)', async () => {
    // A run that waited on an approval in its one page, and a one-item run of set-based nodes settled at once.
    const file = path.join(__dirname, '../fixtures/histories/with-run-phases-patch.json');
    const recorded = Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>);
    assert.equal(recorded.length, 2);
    const histories = recorded.map(([workflowId, json]) => ({ workflowId, history: historyFromJSON(json) }));
    assert.ok(histories.every((r) => r.history.events?.some((e) => e.markerRecordedEventAttributes)));
    assert.equal(await replay(histories), recorded.length);
  });

  it('replays agentRunV2 histories (runs the web started before agentRunV3, whose opening was an activity)', async () => {
    // A run that waited on an approval in its one page, and a one-item run of set-based nodes settled at once.
    const file = path.join(__dirname, '../fixtures/histories/agent-run-v2.json');
    const recorded = Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>);
    assert.equal(recorded.length, 2);
    const histories = recorded.map(([workflowId, json]) => ({ workflowId, history: historyFromJSON(json) }));
    const { EventType } = temporal.api.enums.v1;
    for (const { history } of histories) {
      assert.equal(history.events![0].workflowExecutionStartedEventAttributes!.workflowType!.name, 'agentRunV2');
      assert.ok(history.events!.some((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED));
    }
    assert.equal(await replay(histories), recorded.length);
  });

  it('replays histories of cancelled runs recorded before a cancelled run ended Canceled (they closed Completed)', async () => {
    // agentRunV3 and agentRun runs of one page cancelled while an approval waited, and an agentRunV3 run of two pages
    // with its page that waited (which already ended Canceled). The patch keeps them closing as they did.
    const file = path.join(__dirname, '../fixtures/histories/cancelled-runs.json');
    const recorded = Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>);
    assert.equal(recorded.length, 4);
    const histories = recorded.map(([workflowId, json]) => ({ workflowId, history: historyFromJSON(json) }));
    const { EventType } = temporal.api.enums.v1;
    const runs = histories.filter((r) => !r.workflowId.includes('/page-'));
    assert.deepEqual(
      runs.map((r) => r.history.events!.at(-1)!.eventType),
      runs.map(() => EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED),
    );
    assert.ok(
      runs.every((r) => r.history.events!.some((e) => e.workflowExecutionCancelRequestedEventAttributes)),
      'each run was cancelled',
    );
    assert.equal(await replay(histories), recorded.length);
  });

  it('replays histories of workflows that started their runs as agentRun (a schedule fire, a batch, agent calls)', async () => {
    // Recorded before every door started the current run type (currentRunTypePatch): a schedule's fire, a batch of
    // deliveries, and agentRunV3 runs whose call_agent step waited on its called run and did not.
    const file = path.join(__dirname, '../fixtures/histories/run-starts-before-current-type.json');
    const recorded = Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>);
    const histories = recorded.map(([workflowId, json]) => ({ workflowId, history: historyFromJSON(json) }));
    const typeOf = (history: (typeof histories)[number]['history']) =>
      history.events![0].workflowExecutionStartedEventAttributes!.workflowType!.name;
    assert.deepEqual(histories.map((r) => typeOf(r.history)).sort(), [
      'agentRunV3',
      'agentRunV3',
      'deliveryBatch',
      'scheduledRun',
    ]);
    for (const { history } of histories) {
      const children = history.events!.flatMap((e) => e.startChildWorkflowExecutionInitiatedEventAttributes ?? []);
      assert.deepEqual(
        children.map((c) => c.workflowType!.name),
        ['agentRun'],
      );
    }
    assert.equal(await replay(histories), recorded.length);
  });

  it('runs a one-item run of set-based nodes as one workflow task, its opening a local activity', async () => {
    const spec = JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples/route-csv-rows.json'), 'utf8'));
    const agent = await createLiveAgent(h, ws, spec);
    const run = await startTestRun(h, ws, agent.id, 'invoice,vendor,amount\nINV-1,Acme,120.50');
    const ended = await waitForRun(h, run.id);
    assert.equal(ended.status, 'completed');
    // The run's row is written by the local activity, a moment before its workflow task completes and closes it.
    await h.client.workflow.getHandle(`run-${run.id}`).result();
    const history = await fetchHistory(`run-${run.id}`);
    const { EventType } = temporal.api.enums.v1;
    const count = (type: temporal.api.enums.v1.EventType) =>
      (history.events ?? []).filter((e) => e.eventType === type).length;
    assert.equal(history.events![0].workflowExecutionStartedEventAttributes!.workflowType!.name, 'agentRunV3');
    assert.equal(count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), 0, 'no activity task');
    assert.equal(count(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED), 0, 'no page child workflow');
    // The local activity's result is its one marker; no patch marker, no search-attribute upsert.
    assert.equal(count(EventType.EVENT_TYPE_MARKER_RECORDED), 1, 'the local activity');
    assert.equal(count(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES), 0, 'no upsert');
    assert.equal(count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED), 1, 'one workflow task');
    assert.equal(history.events!.length, 6);
    const [item] = await h.stack.knex('run_items').where({ run_id: run.id }).select('status', 'output_node');
    assert.deepEqual(item, { status: 'done', output_node: 'report' });
    assert.equal(await replay([{ workflowId: `run-${run.id}`, history }]), 1);
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
