// The run engine against a real Temporal dev server and the embedded Postgres.
import assert from 'node:assert/strict';
import { reviewUpdate } from '../../workflows/contracts';
import { randomUUID } from 'node:crypto';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { startHttpSink, startSmtpSink, type HttpSink, type SmtpSink } from '../support/sinks';
import { decideUpdate } from '../../workflows/contracts';
import { runWorkflowId } from '../../model/run-identity';

describe('run engine', () => {
  let h: Harness;
  let ws: string;
  let httpSink: HttpSink;
  let smtp: SmtpSink;

  before(async () => {
    httpSink = await startHttpSink();
    smtp = await startSmtpSink();
    h = await createHarness({
      config: { http: { allowHosts: ['127.0.0.1'] }, smtp: { url: smtp.url, from: 'Cadre <cadre@test>' } } as never,
    });
    ws = (await createTestWorkspace(h)).workspace.id;
  });
  after(async () => {
    await h?.close();
    await httpSink?.close();
    await smtp?.close();
  });
  beforeEach(() => {
    httpSink.requests.length = 0;
    smtp.messages.length = 0;
  });

  it('routes CSV rows: cleans them, flags large ones for review and writes the rest to a CSV file', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'route',
      nodes: [
        { kind: 'input', id: 'rows', format: 'csv', next: 'clean' },
        {
          kind: 'transform',
          id: 'clean',
          cast: { amount: 'number' },
          set: { label: '{{vendor}} ({{invoice}})' },
          next: 'route',
        },
        {
          kind: 'branch',
          id: 'route',
          branches: [{ when: { field: 'amount', op: 'gt', value: 10000 }, next: 'review' }],
          otherwise: 'report',
        },
        { kind: 'flag_for_review', id: 'review', reason: '{{invoice}} is large' },
        { kind: 'output', id: 'report', format: 'csv', fields: ['invoice', 'amount', 'label'] },
      ],
    });
    const run = await startTestRun(
      h,
      ws,
      agent.id,
      'invoice,vendor,amount\nINV-1,Acme,"1,200.50"\nINV-2,Globex,18250\nINV-3,Initech,990',
    );
    const waiting = await waitForRun(h, run.id, (r) => Number(r.needs_review) === 1 && Number(r.done) === 2);
    assert.equal(waiting.status, 'needs_review'); // a flagged item waits on a person, and the run with it
    assert.equal(waiting.ended_at, null);
    assert.deepEqual([waiting.total, waiting.done, waiting.needs_review, waiting.failed], [3, 2, 1, 0]);
    const rows = await items(h, run.id);
    assert.equal(rows[1].status, 'needs_review');
    assert.equal(rows[1].error, 'flagged for review: INV-2 is large');
    assert.deepEqual(rows[0].output, { invoice: 'INV-1', amount: 1200.5, label: 'Acme (INV-1)' });
    // A reviewer accepts it (the flag node has no next, so it is done as it is) and the run ends.
    const review = await h.stack.knex('item_reviews').where({ run_id: run.id, status: 'pending' }).first();
    await h.client.workflow
      .getHandle(review.workflow_id)
      .executeUpdate(reviewUpdate, { args: [{ reviewId: review.id, decision: { action: 'accept' }, by: 'r' }] });
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual([done.done, done.needs_review], [3, 0]);
    const [file] = await h.stack.knex('files').where({ run_id: run.id });
    assert.equal(
      file.content.toString(),
      'invoice,amount,label\nINV-1,1200.5,Acme (INV-1)\nINV-3,990,Initech (INV-3)\n',
    );
  });

  it('fails one item whose data cannot be cleaned, and completes the run with the failure listed', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'cast',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'cast' },
        { kind: 'transform', id: 'cast', cast: { amount: 'number' } },
      ],
    });
    const run = await startTestRun(
      h,
      ws,
      agent.id,
      JSON.stringify([{ amount: '5' }, { amount: 'five' }, { amount: 7 }]),
    );
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual([done.done, done.failed], [2, 1]);
    const rows = await items(h, run.id);
    assert.match(rows[1].error, /cast: field "amount" is not a number: "five"/);
  });

  it('counts 10,000 items exactly once in the state store', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'count',
      nodes: [
        { kind: 'input', id: 'in', format: 'lines', next: 'tidy' },
        { kind: 'transform', id: 'tidy', set: { n: '{{text}}' }, cast: { n: 'number' }, next: 'count' },
        { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'seen' }, save_as: 'seen' },
      ],
    });
    const input = Array.from({ length: 10_000 }, (_, i) => String(i)).join('\n');
    const run = await startTestRun(h, ws, agent.id, input);
    const done = await waitForRun(h, run.id, undefined, 180_000);
    assert.equal(done.status, 'completed');
    assert.equal(done.done, 10_000);
    const state = await h.stack.knex('agent_state').where({ agent_id: agent.id, key: 'seen' }).first();
    assert.equal(state.value, 10_000);
    const seen = (await items(h, run.id)).map((i) => i.data.seen).sort((a, b) => a - b);
    assert.deepEqual(
      seen,
      Array.from({ length: 10_000 }, (_, i) => i + 1),
    ); // every increment distinct
  });

  describe('approvals', () => {
    const webhookAgent = () => ({
      name: 'webhook',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'post' },
        {
          kind: 'tool',
          id: 'post',
          tool: 'http.request',
          arguments: { method: 'POST', url: `${httpSink.url}/hook`, body: { id: '{{id}}', amount: '{{amount}}' } },
          save_as: 'response',
        },
      ],
      policy: {
        approvals: { 'http.request': { mode: 'when', when: { field: 'body.amount', op: 'gt', value: 1000 } } },
      },
    });

    async function pendingApprovals(runId: string, count: number) {
      await waitForRun(h, runId, (r) => r.status === 'needs_review');
      for (;;) {
        const rows = await h.stack.knex('approvals').where({ run_id: runId, status: 'pending' }).orderBy('item_seq');
        if (rows.length >= count) return rows;
        await new Promise((r) => setTimeout(r, 100));
      }
    }

    it('runs small calls at once and waits for a reviewer before a large one; approve → it runs once', async () => {
      const agent = await createLiveAgent(h, ws, webhookAgent());
      const run = await startTestRun(
        h,
        ws,
        agent.id,
        JSON.stringify([
          { id: 'a', amount: 10 },
          { id: 'b', amount: 5000 },
        ]),
      );
      const [approval] = await pendingApprovals(run.id, 1);
      assert.equal(approval.item_seq, 1);
      assert.deepEqual(approval.arguments.body, { id: 'b', amount: 5000 });
      await waitForRun(h, run.id, (r) => r.done === 1); // the small call runs without waiting on anyone
      assert.deepEqual(
        httpSink.requests.map((r) => r.body),
        [{ id: 'a', amount: 10 }],
      );

      await h.client.workflow
        .getHandle(approval.workflow_id)
        .executeUpdate(decideUpdate, { args: [{ approvalId: approval.id, approve: true, by: 'reviewer@test' }] });
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'completed');
      assert.deepEqual(
        httpSink.requests.map((r) => r.body),
        [
          { id: 'a', amount: 10 },
          { id: 'b', amount: 5000 },
        ],
      );
      const decided = await h.stack.knex('approvals').where({ id: approval.id }).first();
      assert.equal(decided.status, 'approved');
      assert.equal(decided.decided_by, 'reviewer@test');
      // deciding twice is refused with a reason
      await assert.rejects(
        h.client.workflow
          .getHandle(approval.workflow_id)
          .executeUpdate(decideUpdate, { args: [{ approvalId: approval.id, approve: false, by: 'x' }] }),
      );
    });

    it('reject → the call never happens and the item says who rejected it', async () => {
      const agent = await createLiveAgent(h, ws, webhookAgent());
      const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ id: 'c', amount: 9000 }]));
      const [approval] = await pendingApprovals(run.id, 1);
      await h.client.workflow.getHandle(approval.workflow_id).executeUpdate(decideUpdate, {
        args: [{ approvalId: approval.id, approve: false, by: 'boss@test', reason: 'duplicate' }],
      });
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'completed');
      assert.equal(httpSink.requests.length, 0);
      const [item] = await items(h, run.id);
      assert.equal(item.status, 'skipped');
      assert.equal(item.error, 'rejected by boss@test: duplicate');
    });

    it('approve with edits → the call runs with the edited arguments', async () => {
      const agent = await createLiveAgent(h, ws, webhookAgent());
      const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ id: 'd', amount: 7000 }]));
      const [approval] = await pendingApprovals(run.id, 1);
      const edited = { ...approval.arguments, body: { id: 'd', amount: 6500 } };
      await h.client.workflow.getHandle(approval.workflow_id).executeUpdate(decideUpdate, {
        args: [{ approvalId: approval.id, approve: true, arguments: edited, by: 'r' }],
      });
      await waitForRun(h, run.id);
      assert.deepEqual(
        httpSink.requests.map((r) => r.body),
        [{ id: 'd', amount: 6500 }],
      );
    });

    it('timeout → the policy decides (here: reject)', async () => {
      const agent = await createLiveAgent(h, ws, {
        ...webhookAgent(),
        policy: { ...webhookAgent().policy, approval_timeout_seconds: 1, on_approval_timeout: 'reject' },
      });
      const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ id: 'e', amount: 2000 }]));
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'completed');
      assert.equal(httpSink.requests.length, 0);
      const approval = await h.stack.knex('approvals').where({ run_id: run.id }).first();
      assert.equal(approval.status, 'timed_out');
      assert.equal((await items(h, run.id))[0].error, 'rejected by policy: approval timed out');
    });
  });

  it('sends one email per item over SMTP, with a stable Message-ID', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'mail',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'mail' },
        {
          kind: 'tool',
          id: 'mail',
          tool: 'email.send',
          arguments: { to: '{{email}}', subject: 'Hello {{name}}', text: 'Your total is {{total}}.' },
        },
      ],
    });
    const run = await startTestRun(
      h,
      ws,
      agent.id,
      JSON.stringify([
        { email: 'ann@example.com', name: 'Ann', total: 3 },
        { email: 'bob@example.com', name: 'Bob', total: 4 },
      ]),
    );
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(smtp.messages.map((m) => m.to).sort(), [['ann@example.com'], ['bob@example.com']]);
    const ann = smtp.messages.find((m) => m.to[0] === 'ann@example.com')!;
    assert.match(ann.raw, /Subject: Hello Ann/);
    assert.match(ann.raw, new RegExp(`Message-ID: <${run.id}:0:mail@cadre>`.replace(/[.]/g, '\\.').replace(/:/g, '.')));
  });

  it('emails the error policy’s address once when items fail, with what failed and a link to the run', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'strict numbers',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'cast' },
        { kind: 'transform', id: 'cast', cast: { n: 'number' }, next: null },
      ],
      policy: { error_policy: { notify_email: 'ops@example.com' } },
    });
    const run = await startTestRun(h, ws, agent.id, '[{"n":"1"},{"n":"one"}]');
    const done = await waitForRun(h, run.id);
    assert.equal(done.status, 'completed');
    const notice = await (async () => {
      for (let i = 0; i < 100; i++) {
        const m = smtp.messages.find((x) => x.to[0] === 'ops@example.com');
        if (m) return m;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('no failure notice arrived');
    })();
    assert.match(notice.raw, /Subject: /);
    assert.match(notice.raw, /\nCadre: 1 of 2 items failed in a run of "strict numbers"\./);
    assert.match(notice.raw, /#1: cast:/);
    assert.match(notice.raw, new RegExp(`/runs/${run.id}`));
    assert.equal(smtp.messages.filter((m) => m.to[0] === 'ops@example.com').length, 1);

    // Nothing failed → no email.
    const clean = await startTestRun(h, ws, agent.id, '[{"n":"2"}]');
    await waitForRun(h, clean.id);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(smtp.messages.filter((m) => m.to[0] === 'ops@example.com').length, 1);
  });

  it('emails the error policy’s address when the run itself fails before any item (its input cannot be read)', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'json only',
      nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }],
      policy: { error_policy: { notify_email: 'oncall@example.com' } },
    });
    // The API refuses such input up front; a run row written another way (an older version, a bug) still ends
    // failed, and someone hears of it.
    const runId = randomUUID();
    await h.stack.knex('runs').insert({
      id: runId,
      workspace_id: ws,
      agent_id: agent.id,
      agent_version: agent.current_version,
      trigger: 'api',
      input: '{"not": json',
    });
    await h.client.workflow.start('agentRun', {
      workflowId: runWorkflowId(runId),
      taskQueue: h.temporalConfig.taskQueue,
      args: [{ runId }],
    });
    const done = await waitForRun(h, runId);
    assert.equal(done.status, 'failed');
    assert.match(done.error, /^the input could not be read: /);
    for (let i = 0; i < 100 && !smtp.messages.some((m) => m.to[0] === 'oncall@example.com'); i++)
      await new Promise((r) => setTimeout(r, 100));
    const notices = smtp.messages.filter((m) => m.to[0] === 'oncall@example.com');
    assert.equal(notices.length, 1);
    assert.match(notices[0].raw, /Cadre: a run of "json only" failed\./);
    assert.match(notices[0].raw, /Why: the input could not be read/);
  });

  it('refuses calls to internal addresses unless the host is allowed, failing the item with the reason', async () => {
    const strict = await createHarness(); // default configuration: no hosts allowed
    try {
      const wsId = (await createTestWorkspace(strict)).workspace.id;
      const agent = await createLiveAgent(strict, wsId, {
        name: 'ssrf',
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'get' },
          { kind: 'tool', id: 'get', tool: 'http.request', arguments: { method: 'GET', url: '{{url}}' } },
        ],
      });
      const run = await startTestRun(
        strict,
        wsId,
        agent.id,
        JSON.stringify([{ url: `${httpSink.url}/x` }, { url: 'http://169.254.169.254/latest/meta-data' }]),
      );
      const done = await waitForRun(strict, run.id);
      assert.equal(done.failed, 2);
      const rows = await items(strict, run.id);
      assert.match(
        rows[0].error,
        /127\.0\.0\.1 resolves to 127\.0\.0\.1, a private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/,
      );
      assert.match(rows[1].error, /169\.254\.169\.254/);
      assert.equal(httpSink.requests.length, 0);
    } finally {
      await strict.close();
    }
  });

  it('cancels a running batch at once: finished items keep their results and nothing runs afterwards', async () => {
    const slow = await startHttpSink();
    const agent = await createLiveAgent(h, ws, {
      name: 'cancel',
      nodes: [
        { kind: 'input', id: 'in', format: 'lines', next: 'count' },
        { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'n' }, next: 'gate' },
        {
          kind: 'approval',
          id: 'gate',
          message: 'ok?',
          when: { field: 'text', op: 'equals', value: 'wait' },
          next: 'post',
        },
        {
          kind: 'tool',
          id: 'post',
          tool: 'http.request',
          arguments: { method: 'POST', url: `${slow.url}/after`, body: { t: '{{text}}' } },
        },
      ],
      policy: { approvals: { 'http.request': { mode: 'never' } } },
    });
    try {
      const run = await startTestRun(h, ws, agent.id, 'wait\nwait\nwait');
      await waitForRun(h, run.id, (r) => r.status === 'needs_review');
      await h.client.workflow.getHandle(`run-${run.id}`).cancel();
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'cancelled');
      assert.equal(done.skipped, 3);
      const state = await h.stack.knex('agent_state').where({ agent_id: agent.id, key: 'n' }).first();
      assert.equal(state.value, 3); // the work done before the cancel stays
      const approvals = await h.stack.knex('approvals').where({ run_id: run.id });
      assert.ok(approvals.every((a) => a.status === 'cancelled'));
      assert.equal(slow.requests.length, 0);
    } finally {
      await slow.close();
    }
  });
});
