// A small run of set-based nodes is settled at once: walked in memory and written in one statement
// (activities/run-lifecycle.ts settleAtOnce). What it leaves must be what the paged path leaves for the same items,
// since which path a run takes depends only on its size.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  spawnWorker,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { runWorkflowId } from '../../model/run-identity';
import { getAgent } from '../../db/agents';
import { startRun } from '../../services/runs/start';
import { cancelRunWorkflow } from '../../services/runs/dispatch';
import { writeSettledRun } from '../../db/settled-run';

const spec = {
  name: 'split invoices',
  nodes: [
    { kind: 'input', id: 'rows', format: 'csv', next: 'clean' },
    {
      kind: 'transform',
      id: 'clean',
      cast: { amount: 'number' },
      set: { label: '{{vendor}} ({{invoice}})', zone: 'eu' },
      next: 'route',
    },
    {
      kind: 'branch',
      id: 'route',
      branches: [{ when: { field: 'amount', op: 'gt', value: 100 }, next: 'large' }],
      otherwise: 'small',
    },
    { kind: 'output', id: 'large', format: 'json', file_name: 'large.json' },
    { kind: 'output', id: 'small', format: 'csv', file_name: 'small.csv' },
  ],
};

// The first rows of both runs: one cannot be cleaned, one small, one large.
const header = 'invoice,vendor,amount,notes';
const rows = ['INV-1,Acme,not a number,x', 'INV-2,Globex,50,"a, b"', 'INV-3,Initech,500,'];

describe('small runs settled at once', () => {
  let h: Harness;
  let ws: string;

  before(async () => {
    h = await createHarness();
    ws = (await createTestWorkspace(h)).workspace.id;
  });
  after(async () => h?.close());

  /** Activities a run's workflow ran: activity tasks, and local activities (each one marker). */
  const activitiesOf = async (runId: string) => {
    const history = await h.client.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
    return history.events!.filter(
      (e) =>
        e.activityTaskScheduledEventAttributes || e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    ).length;
  };
  const fileOf = async (runId: string, name: string) =>
    (await h.stack.knex('files').where({ run_id: runId, name }).first('content'))?.content.toString('utf8') as string;
  const countOf = async (table: string, runId: string) =>
    Number((await h.stack.knex(table).where({ run_id: runId }).count({ n: '*' }))[0].n);
  const logsOf = async (runId: string) =>
    (await h.stack.knex('run_logs').where({ run_id: runId }).orderBy('id').select('level', 'message', 'item_seq')).map(
      (l) => ({ ...l }),
    );

  it('records what the paged path records for the same items: items, outputs, files, node counters, logs', async () => {
    const agent = await createLiveAgent(h, ws, spec);
    const more = Array.from({ length: 1_000 }, (_, i) => `INV-${i + 4},Hooli,${i % 2 ? 20 : 200},`);
    const small = await startTestRun(h, ws, agent.id, [header, ...rows].join('\n'));
    const paged = await startTestRun(h, ws, agent.id, [header, ...rows, ...more].join('\n'));
    const [a, b] = await Promise.all([waitForRun(h, small.id), waitForRun(h, paged.id, undefined, 120_000)]);

    // The small run was one (local) activity; the large one took the paged path (opening, pages, closing).
    assert.equal(await activitiesOf(small.id), 1);
    assert.ok((await activitiesOf(paged.id)) >= 2);

    assert.equal(a.status, 'completed');
    assert.deepEqual([b.status, b.total, b.failed], ['completed', 1_003, 1]);
    assert.deepEqual(
      { total: a.total, done: a.done, failed: a.failed, needs_review: a.needs_review, error: a.error },
      { total: 3, done: 2, failed: 1, needs_review: 0, error: null },
    );
    assert.ok(a.started_at && a.ended_at);

    const fields = (i: Record<string, unknown>) => ({
      seq: i.seq,
      status: i.status,
      data: i.data,
      node_id: i.node_id,
      output: i.output,
      output_node: i.output_node,
      error: i.error,
    });
    const smallItems = (await items(h, small.id)).map(fields);
    assert.deepEqual(smallItems, (await items(h, paged.id)).slice(0, 3).map(fields));
    assert.equal(smallItems[0].status, 'failed');
    assert.match(String(smallItems[0].error), /^clean: /);
    // Object keys in the order the database keeps them, on both paths (the CSV's columns follow them).
    assert.deepEqual(Object.keys(smallItems[2].output as object), Object.keys((await items(h, paged.id))[2].output));

    const csvA = (await fileOf(small.id, 'small.csv')).trim().split('\n');
    const csvB = (await fileOf(paged.id, 'small.csv')).trim().split('\n');
    assert.equal(csvA.length, 2); // header and INV-2
    assert.deepEqual(csvA, csvB.slice(0, 2));
    assert.match(csvA[1], /INV-2/);
    const jsonA = JSON.parse(await fileOf(small.id, 'large.json'));
    const jsonB = JSON.parse(await fileOf(paged.id, 'large.json'));
    assert.deepEqual(jsonA, jsonB.slice(0, 1));
    assert.equal(jsonA[0].invoice, 'INV-3');

    const outputsOf = async (runId: string) =>
      Object.fromEntries(
        (await h.stack.knex('run_outputs').where({ run_id: runId }).select('node_id', 'data')).map((o) => [
          o.node_id,
          o.data,
        ]),
      );
    const [outA, outB] = [await outputsOf(small.id), await outputsOf(paged.id)];
    assert.deepEqual(Object.keys(outA).sort(), ['large', 'small']);
    assert.deepEqual(outA.small, outB.small.slice(0, 1));
    assert.deepEqual(outA.large, outB.large.slice(0, 1));

    const activity = await h.stack
      .knex('node_activity')
      .where({ run_id: small.id })
      .orderBy('node_id')
      .select('node_id', 'kind', 'items_in', 'items_done', 'items_failed');
    assert.deepEqual(
      activity.map((r) => ({ ...r })),
      [
        { node_id: 'clean', kind: 'transform', items_in: 3, items_done: 2, items_failed: 1 },
        { node_id: 'large', kind: 'output', items_in: 1, items_done: 1, items_failed: 0 },
        { node_id: 'route', kind: 'branch', items_in: 2, items_done: 2, items_failed: 0 },
        { node_id: 'small', kind: 'output', items_in: 1, items_done: 1, items_failed: 0 },
      ],
    );

    const pagedNodes = await h.stack
      .knex('node_activity')
      .where({ run_id: paged.id })
      .orderBy('node_id')
      .pluck('node_id');
    assert.deepEqual(
      pagedNodes,
      activity.map((r) => r.node_id),
    );

    const [logsA, logsB] = [await logsOf(small.id), await logsOf(paged.id)];
    assert.deepEqual(logsA, [
      { level: 'info', message: 'input parsed into 3 items', item_seq: null },
      logsB.find((l) => l.item_seq === 0),
      { level: 'info', message: 'run completed: 2 done, 1 failed, 0 need review of 3', item_seq: null },
    ]);

    const events = await h.stack.knex('agent_events').where({ run_id: small.id }).select('kind', 'message', 'details');
    assert.equal(events.length, 1);
    assert.equal(events[0].kind, 'run_finished');
    assert.equal(events[0].message, 'manual run of version 1 completed: 2 done, 1 failed, 0 need review of 3');
    assert.deepEqual(events[0].details, {
      status: 'completed',
      trigger: 'manual',
      counts: { total: 3, done: 2, failed: 1, needs_review: 0 },
    });
  });

  it('a test run of a draft that completes at once marks its version tested', async () => {
    const agent = await createLiveAgent(h, ws, spec, 'draft');
    const workspace = await h.stack.knex('workspaces').where({ id: ws }).first();
    const { run } = await startRun(
      { knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig },
      { workspace, agent, input: [header, ...rows].join('\n'), trigger: 'test' },
    );
    assert.equal((await waitForRun(h, run.id)).status, 'completed');
    assert.equal(await activitiesOf(run.id), 1);
    assert.equal((await getAgent(h.stack.knex, ws, agent.id))!.tested_version, agent.current_version);
    const [event] = await h.stack.knex('agent_events').where({ run_id: run.id }).select('kind');
    assert.equal(event.kind, 'test_run');
  });

  it('fails a small run whose every item failed, with the reason, as the paged path does', async () => {
    const agent = await createLiveAgent(h, ws, spec);
    const run = await startTestRun(h, ws, agent.id, `${header}\nINV-9,Acme,n/a,`);
    const ended = await waitForRun(h, run.id);
    assert.equal(ended.status, 'failed');
    assert.equal(ended.error, 'all 1 items failed');
    assert.equal(await activitiesOf(run.id), 1);
    assert.equal(await h.stack.knex('files').where({ run_id: run.id }).first(), undefined);
  });

  it('writes nothing over a run that is no longer fresh (ended, or opened by another attempt)', async () => {
    const agent = await createLiveAgent(h, ws, spec);
    const run = await startTestRun(h, ws, agent.id, `${header}\nINV-7,Acme,20,`);
    const ended = await waitForRun(h, run.id);
    const before = await Promise.all(['run_items', 'run_logs', 'files', 'agent_events'].map((t) => countOf(t, run.id)));
    const written = await writeSettledRun(h.stack.knex, {
      run: { id: run.id, workspace_id: ws, agent_id: agent.id, agent_version: agent.current_version },
      end: { status: 'failed', error: 'again', total: 1, done: 0, failed: 1 },
      items: [{ seq: 5, status: 'failed', data: {}, node_id: null, output: null, output_node: null, error: 'x' }],
      activity: [{ node_id: 'clean', kind: 'transform', items_in: 1, items_done: 0, items_failed: 1 }],
      logs: [{ level: 'info', message: 'again' }],
      outputs: [{ node_id: 'small', data: [] }],
      files: [{ id: randomUUID(), name: 'x.csv', content_type: 'text/csv', size: 1, content: Buffer.from('x') }],
      event: { workspace_id: ws, agent_id: agent.id, kind: 'run_finished', message: 'again', run_id: run.id },
      tested: false,
    });
    assert.equal(written, false);
    const after = await Promise.all(['run_items', 'run_logs', 'files', 'agent_events'].map((t) => countOf(t, run.id)));
    assert.deepEqual(after, before);
    const row = await h.stack.knex('runs').where({ id: run.id }).first('status', 'error', 'ended_at');
    assert.deepEqual(row, { status: 'completed', error: null, ended_at: ended.ended_at });
  });

  it('leaves a small run whose items need a person to the paged path', async () => {
    const agent = await createLiveAgent(h, ws, {
      ...spec,
      nodes: [
        ...spec.nodes.slice(0, 3),
        { kind: 'flag_for_review', id: 'large', reason: '{{invoice}} is large' },
        spec.nodes[4],
      ],
    });
    const run = await startTestRun(h, ws, agent.id, [header, ...rows].join('\n'));
    const waiting = await waitForRun(h, run.id, (r) => r.status === 'needs_review');
    assert.equal(waiting.needs_review, 1);
    const reviews = await h.stack.knex('item_reviews').where({ run_id: run.id }).select('item_seq', 'status');
    assert.deepEqual(
      reviews.map((r) => ({ ...r })),
      [{ item_seq: 2, status: 'pending' }],
    );
    await h.client.workflow.getHandle(runWorkflowId(run.id)).cancel();
    assert.equal((await waitForRun(h, run.id)).status, 'cancelled');
  });
});

describe('small runs under a worker kill and a cancel', () => {
  let h: Harness;
  let ws: string;
  const workers: ChildProcess[] = [];

  before(async () => {
    h = await createHarness({ worker: false }); // these runs go to worker processes, which the tests kill
    ws = (await createTestWorkspace(h)).workspace.id;
  });
  after(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await h?.close();
  });
  const startWorker = () => {
    const child = spawnWorker(h);
    workers.push(child);
    return child;
  };
  const countWhere = async (table: string, runIds: string[], where: Record<string, unknown> = {}) =>
    (await h.stack.knex(table).whereIn('run_id', runIds).where(where).count({ n: '*' }))[0].n;

  it('a worker SIGKILLed amid a burst of one-item runs: every run ends once, with its item, file and timeline entry once', async () => {
    const agent = await createLiveAgent(h, ws, spec);
    const runs = 150;
    const ids: string[] = [];
    for (let i = 0; i < runs; i++)
      ids.push((await startTestRun(h, ws, agent.id, `${header}\nINV-${i},Acme,${i % 2 ? 20 : 200},`)).id);
    const first = startWorker();
    // Killed once some runs have ended and others have not.
    for (;;) {
      const ended = Number(
        await h.stack
          .knex('runs')
          .whereIn('id', ids)
          .whereNotNull('ended_at')
          .count({ n: '*' })
          .then((r) => r[0].n),
      );
      if (ended >= 5) {
        first.kill('SIGKILL');
        assert.ok(ended < runs, 'the kill came while runs were still under way');
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => first.once('exit', r));
    startWorker();
    for (const id of ids) assert.equal((await waitForRun(h, id, undefined, 120_000)).status, 'completed');

    assert.equal(Number(await countWhere('run_items', ids)), runs);
    assert.equal(Number(await countWhere('run_items', ids, { status: 'done' })), runs);
    assert.equal(Number(await countWhere('files', ids)), runs);
    assert.equal(Number(await countWhere('agent_events', ids, { kind: 'run_finished' })), runs);
    assert.equal(Number(await countWhere('run_logs', ids)), runs * 2); // input parsed, run completed
    const totals = await h.stack.knex('runs').whereIn('id', ids).select('total', 'done', 'failed');
    assert.ok(totals.every((r) => r.total === 1 && r.done === 1 && r.failed === 0));
  });

  it('a one-item run cancelled before any worker took it ends cancelled, with nothing run', async () => {
    const agent = await createLiveAgent(h, ws, spec);
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    const run = await startTestRun(h, ws, agent.id, `${header}\nINV-1,Acme,20,`);
    // As the API's cancel does: the run is answered before its workflow's start lands.
    await cancelRunWorkflow({ temporal: h.client, temporalConfig: h.temporalConfig }, run);
    startWorker();
    const ended = await waitForRun(h, run.id);
    assert.equal(ended.status, 'cancelled');
    assert.equal(Number(await countWhere('run_items', [run.id])), 0);
    assert.equal(Number(await countWhere('files', [run.id])), 0);
  });
});
