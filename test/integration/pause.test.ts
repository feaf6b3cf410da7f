// Pausing and resuming a running run (issue 36 §1): steps under way finish theirs, nothing new starts (no page, no
// item step), approvals can still be decided and what they release waits for the resume; the resume goes on where
// the run stopped, each item done once and the state store exact; the pause holds across a worker's SIGKILL; a paused
// run can be cancelled; the timeline says who paused and resumed.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { runWorkflowId } from '../../model/run-identity';
import { pageWorkflowId } from '../../workflows/contracts';
import { checkedFetch } from '../support/openapi-check';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  spawnWorker,
  startApi,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import type { Workspace } from '../../db/workspaces';

/**
 * An HTTP receiver that can hold its answers: while held, requests wait unanswered (the tool call that sent one is
 * "inside its step"); `release` answers them all and every later one at once.
 */
async function startHeldSink() {
  const requests: { idempotencyKey: string; body: { n: number } }[] = [];
  let waiting: (() => void)[] = [];
  let held = true;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      requests.push({ idempotencyKey: String(req.headers['idempotency-key']), body: JSON.parse(raw) });
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      if (held) waiting.push(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    waiting: () => waiting.length,
    release() {
      held = false;
      for (const answer of waiting) answer();
      waiting = [];
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
type HeldSink = Awaited<ReturnType<typeof startHeldSink>>;

/** Items marked `slow` call the sink and then add their `n` to the state store; the others only pass through. */
const slowAgent = (sinkUrl: string, concurrency: number) => ({
  name: 'pausable',
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'route' },
    { kind: 'branch', id: 'route', branches: [{ when: { field: 'slow', op: 'equals', value: true }, next: 'post' }] },
    {
      kind: 'tool',
      id: 'post',
      tool: 'http.request',
      arguments: { method: 'POST', url: `${sinkUrl}/book`, body: { n: '{{n}}' } },
      next: 'count',
    },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'booked', by: '{{n}}' } },
  ],
  policy: { concurrency },
});

// Items over 100 wait for an approval; the others count at once.
const gated = {
  name: 'gated payments',
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'route' },
    {
      kind: 'branch',
      id: 'route',
      branches: [{ when: { field: 'amount', op: 'gt', value: 100 }, next: 'gate' }],
      otherwise: 'count',
    },
    { kind: 'approval', id: 'gate', message: 'pay {{amount}}?', next: 'count' },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'paid', by: '{{amount}}' } },
  ],
};

const settle = () => new Promise((r) => setTimeout(r, 2_000));

describe('pause and resume a running run', () => {
  let h: Harness;
  let workspace: Workspace;
  let key: string;
  let api: { url: string; close(): Promise<void> };

  before(async () => {
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    ({ workspace, key } = await createTestWorkspace(h));
    api = await startApi(h);
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const call = async (method: string, path: string, body?: unknown, bearer = key) => {
    const res = await checkedFetch(`${api.url}/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const stateOf = async (agentId: string, k: string) =>
    Number((await h.stack.knex('agent_state').where({ agent_id: agentId, key: k }).first())?.value ?? 0);
  const usedRuns = async () =>
    Number((await h.stack.knex('workspace_usage').where({ workspace_id: workspace.id }).first('runs'))?.runs ?? 0);
  /** Whether a workflow's history holds a signal of this name yet. */
  const signalled = async (workflowId: string, name: string) => {
    const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name);
  };
  /** Items whose call step has finished and whose state-store step comes next. */
  const atCount = async (runId: string) =>
    Number((await h.stack.knex('run_items').where({ run_id: runId, node_id: 'count' }).count('* as n'))[0].n);
  const eventually = async (what: string, check: () => Promise<boolean>) => {
    const deadline = Date.now() + 60_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`never: ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('pauses a run of three pages mid-page: steps under way finish, no new step or page starts; the resume does every item once', async () => {
    const sink = await startHeldSink();
    try {
      // Concurrency 2: two lanes of one step each, so pages 0 and 1 run and page 2 waits for a lane.
      const agent = await createLiveAgent(h, workspace.id, slowAgent(sink.url, 2));
      const input = Array.from({ length: 2_100 }, (_, n) => ({ n, slow: n % 1000 < 4 }));
      const slow = input.filter((i) => i.slow);
      const before = await usedRuns();
      const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify(input));
      const wf = runWorkflowId(run.id);

      // One step of each running page is inside its tool call, held by the sink.
      await eventually('two calls wait at the sink', async () => sink.waiting() === 2);
      const paused = await call('POST', `/runs/${run.id}/pause`);
      assert.equal(paused.status, 202);
      assert.equal(paused.body.status, 'paused');
      // Both page workflows have been told (the run forwards the pause to its pages by signal).
      for (const page of [0, 1])
        await eventually(`page ${page} told`, () => signalled(pageWorkflowId(wf, page), 'hold'));

      // The two calls under way finish their step; nothing new starts while the run is paused.
      sink.release();
      await eventually('the two calls finish their step', async () => (await atCount(run.id)) === 2);
      await settle();
      assert.equal(sink.requests.length, 2, 'no tool call started while paused');
      assert.equal(await atCount(run.id), 2, 'no state-store step started while paused');
      await assert.rejects(h.client.workflow.getHandle(pageWorkflowId(wf, 2)).describe(), WorkflowNotFoundError);
      // A paused run holds no worker slot: neither the run nor its pages have an activity or a workflow task pending.
      for (const workflowId of [wf, pageWorkflowId(wf, 0), pageWorkflowId(wf, 1)]) {
        const { raw } = await h.client.workflow.getHandle(workflowId).describe();
        assert.equal(raw.pendingActivities?.length ?? 0, 0, `${workflowId} runs no activity while paused`);
        assert.equal(raw.pendingWorkflowTask ?? null, null, `${workflowId} has no workflow task while paused`);
      }
      const during = await h.stack.knex('runs').where({ id: run.id }).first();
      assert.equal(during.status, 'paused');
      // Pausing again changes nothing (idempotent).
      assert.equal((await call('POST', `/runs/${run.id}/pause`)).body.status, 'paused');

      const resumed = await call('POST', `/runs/${run.id}/resume`);
      assert.equal(resumed.status, 202);
      assert.equal(resumed.body.status, 'running');
      const done = await waitForRun(h, run.id, undefined, 180_000);
      assert.equal(done.status, 'completed', String(done.error));
      assert.deepEqual([done.total, done.done, done.failed], [2_100, 2_100, 0]);

      // Every slow item called once, under its own key, and the state store holds their sum exactly.
      assert.equal(sink.requests.length, slow.length);
      assert.equal(new Set(sink.requests.map((r) => r.idempotencyKey)).size, slow.length);
      assert.deepEqual(
        sink.requests.map((r) => Number(r.body.n)).sort((a, b) => a - b),
        slow.map((i) => i.n),
      );
      assert.equal(
        await stateOf(agent.id, 'booked'),
        slow.reduce((s, i) => s + i.n, 0),
      );
      assert.equal(await usedRuns(), before + 1, 'the paused run counts as one run');

      // The histories of the paused run and its pages, with the pause and resume signals, replay with this code.
      const ids = [wf, ...[0, 1, 2].map((p) => pageWorkflowId(wf, p))];
      const histories = await Promise.all(
        ids.map(async (workflowId) => ({
          workflowId,
          history: await h.client.workflow.getHandle(workflowId).fetchHistory(),
        })),
      );
      const replayed = Worker.runReplayHistories({ workflowBundle: h.stack.workflowBundle }, histories);
      for await (const result of replayed) assert.equal(result.error, undefined, String(result.error));

      // The timeline: who paused, who resumed (one each: the second pause changed nothing), newest first.
      const timeline = await call('GET', `/agents/${agent.id}/timeline?limit=50`);
      const events = (timeline.body.data as { kind: string; run_id: string; details: { by: string } }[]).filter(
        (e) => e.kind === 'run_paused' || e.kind === 'run_resumed',
      );
      assert.deepEqual(
        events.map((e) => [e.kind, e.run_id, e.details.by]),
        [
          ['run_resumed', run.id, 'API key "test key"'],
          ['run_paused', run.id, 'API key "test key"'],
        ],
      );
    } finally {
      sink.release();
      await sink.close();
    }
  });

  it('pauses a run whose items wait on approval: a decision taken while paused is acted on only after the resume', async () => {
    const agent = await createLiveAgent(h, workspace.id, gated);
    const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify([{ amount: 5 }, { amount: 500 }]));
    await waitForRun(h, run.id, (r) => r.status === 'needs_review' && Number(r.done) === 1);
    assert.equal((await call('POST', `/runs/${run.id}/pause`)).body.status, 'paused');

    // The approval stays open and can be decided.
    const approval = await h.stack.knex('approvals').where({ run_id: run.id }).first();
    const decided = await call('POST', `/approvals/${approval.id}/decision`, { decision: 'approve' });
    assert.equal(decided.status, 200);
    assert.equal(decided.body.status, 'approved');
    // The decision is recorded; the step it releases has not run: the workflow scheduled no step after the pause.
    const history = await h.client.workflow.getHandle(runWorkflowId(run.id)).fetchHistory();
    const events = history.events ?? [];
    const pausedAt = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'pause');
    assert.ok(pausedAt > 0);
    const stepsAfter = events
      .slice(pausedAt)
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeStep');
    assert.equal(stepsAfter.length, 0, 'no step started while paused');
    await settle();
    assert.equal(await stateOf(agent.id, 'paid'), 5);
    const during = await h.stack.knex('runs').where({ id: run.id }).first();
    assert.deepEqual([during.status, during.done], ['paused', 1]);

    assert.equal((await call('POST', `/runs/${run.id}/resume`)).status, 202);
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed', String(done.error));
    assert.equal(done.done, 2);
    assert.equal(await stateOf(agent.id, 'paid'), 505);

    const replayed = Worker.runReplayHistories({ workflowBundle: h.stack.workflowBundle }, [
      {
        workflowId: runWorkflowId(run.id),
        history: await h.client.workflow.getHandle(runWorkflowId(run.id)).fetchHistory(),
      },
    ]);
    for await (const result of replayed) assert.equal(result.error, undefined, String(result.error));
  });

  it('replays a recorded history in which an older worker, with no pause handler, ignored a pause', async () => {
    // A run recorded before pausing existed, that waited on an approval; a pause signal is put into its history just
    // before the workflow task in which the decision came, as a web upgraded before its workers could have sent it.
    // That worker ignored it and went on; this code must replay the history the same way (the pause patch).
    const file = path.join(__dirname, '../fixtures/histories/agent-run-v2.json');
    const [[workflowId, recorded]] = Object.entries(JSON.parse(fs.readFileSync(file, 'utf8'))) as [
      string,
      { events: Record<string, unknown>[] },
    ][];
    const at = recorded.events.findIndex((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED') - 3;
    assert.equal(recorded.events[at].eventType, 'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED');
    const inserted = at + 1; // the new event's id
    const shift = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(shift);
      if (!value || typeof value !== 'object') return value;
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [
          k,
          /(^e|E)ventId$/.test(k) && typeof v === 'string' && Number(v) >= inserted ? String(Number(v) + 1) : shift(v),
        ]),
      );
    };
    const events = [
      ...recorded.events.slice(0, at),
      {
        eventId: String(inserted),
        eventTime: recorded.events[at - 1].eventTime,
        eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
        workflowExecutionSignaledEventAttributes: { signalName: 'pause', input: {}, identity: 'web' },
      },
      ...recorded.events.slice(at).map(shift),
    ];
    const replayed = Worker.runReplayHistories({ workflowBundle: h.stack.workflowBundle }, [
      { workflowId, history: historyFromJSON({ events }) },
    ]);
    for await (const result of replayed) assert.equal(result.error, undefined, String(result.error));
  });

  it('cancels a paused run: it ends cancelled with its counts and its open approvals closed', async () => {
    const agent = await createLiveAgent(h, workspace.id, gated);
    const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify([{ amount: 7 }, { amount: 700 }]));
    await waitForRun(h, run.id, (r) => r.status === 'needs_review' && Number(r.done) === 1);
    assert.equal((await call('POST', `/runs/${run.id}/pause`)).body.status, 'paused');
    const cancelled = await call('POST', `/runs/${run.id}/cancel`);
    assert.equal(cancelled.status, 202);
    const ended = await waitForRun(h, run.id);
    assert.equal(ended.status, 'cancelled');
    assert.deepEqual([ended.done, ended.skipped], [1, 1]);
    const approvals = await h.stack.knex('approvals').where({ run_id: run.id });
    assert.deepEqual(
      approvals.map((a) => a.status),
      ['cancelled'],
    );
    assert.equal(await stateOf(agent.id, 'paid'), 7);
    const handle = h.client.workflow.getHandle(runWorkflowId(run.id));
    await assert.rejects(handle.result(), WorkflowFailedError);
    const execution = await handle.describe();
    assert.equal(execution.status.name, 'CANCELLED');

    // An ended run can be neither paused nor resumed: 409 run_finished, as problem details.
    for (const action of ['pause', 'resume']) {
      const refused = await call('POST', `/runs/${run.id}/${action}`);
      assert.equal(refused.status, 409);
      assert.equal(refused.body.code, 'run_finished');
    }
  });

  it('refuses a key without the run scope (403) and an unknown run (404)', async () => {
    const agent = await createLiveAgent(h, workspace.id, gated);
    const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify([{ amount: 900 }]));
    await waitForRun(h, run.id, (r) => r.status === 'needs_review');
    const { key: readOnly } = await createTestWorkspace(h, { scopes: ['read'] });
    const forbidden = await call('POST', `/runs/${run.id}/pause`, undefined, readOnly);
    assert.equal(forbidden.status, 403);
    const unknown = await call('POST', `/runs/00000000-0000-4000-8000-000000000000/pause`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'run_not_found');
    // Resuming a run that is not paused answers it as it is.
    const asIs = await call('POST', `/runs/${run.id}/resume`);
    assert.deepEqual([asIs.status, asIs.body.status], [202, 'needs_review']);
    await call('POST', `/runs/${run.id}/cancel`);
    await waitForRun(h, run.id);
  });
});

describe('pause across a worker crash', () => {
  let h: Harness;
  let sink: HeldSink;
  const workers: ChildProcess[] = [];

  before(async () => {
    sink = await startHeldSink();
    h = await createHarness({ worker: false }); // this suite's runs go to worker processes
  });
  after(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    sink?.release();
    await h?.close();
    await sink?.close();
  });

  const startWorker = () => {
    const child = spawnWorker(h, { CADRE_HTTP_ALLOW_HOSTS: '127.0.0.1' });
    workers.push(child);
    return child;
  };

  it('a run paused, its worker SIGKILLed, a new worker: the run stays paused, and the resume finishes every item once', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, slowAgent(sink.url, 2));
    const input = Array.from({ length: 12 }, (_, n) => ({ n, slow: true }));
    const first = startWorker();
    const api = await startApi(h);
    try {
      const call = async (action: string) =>
        checkedFetch(`${api.url}/v1/runs/${run.id}/${action}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
        });
      const run = await startTestRun(h, workspace.id, agent.id, JSON.stringify(input));
      const deadline = Date.now() + 60_000;
      while (sink.waiting() < 2) {
        assert.ok(Date.now() < deadline, 'two calls reach the sink');
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal((await call('pause')).status, 202);
      // The pause is in the run's history before the steps under way are let go.
      const handle = h.client.workflow.getHandle(runWorkflowId(run.id));
      for (;;) {
        const events = (await handle.fetchHistory()).events ?? [];
        if (events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'pause')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      sink.release();
      const atCount = async () =>
        Number((await h.stack.knex('run_items').where({ run_id: run.id, node_id: 'count' }).count('* as n'))[0].n);
      while ((await atCount()) < 2) await new Promise((r) => setTimeout(r, 100));
      await settle();

      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      startWorker();
      await settle();
      const during = await h.stack.knex('runs').where({ id: run.id }).first();
      assert.deepEqual([during.status, during.done], ['paused', 0], 'still paused on the new worker');
      assert.equal(sink.requests.length, 2, 'no call started while paused');
      assert.equal(await atCount(), 2, 'the two calls under way finished their step; nothing moved on');

      assert.equal((await call('resume')).status, 202);
      const done = await waitForRun(h, run.id, undefined, 120_000);
      assert.equal(done.status, 'completed', String(done.error));
      assert.deepEqual([done.done, done.failed], [12, 0]);
      assert.equal(sink.requests.length, 12, 'each item called once');
      assert.equal(new Set(sink.requests.map((r) => r.idempotencyKey)).size, 12);
      const booked = await h.stack.knex('agent_state').where({ agent_id: agent.id, key: 'booked' }).first();
      assert.equal(
        Number(booked.value),
        input.reduce((s, i) => s + i.n, 0),
      );
    } finally {
      await api.close();
    }
  });
});
