// A worker killed with SIGKILL mid-run: another worker finishes the run with no item lost, and every side effect
// carries its item's idempotency key, so a receiver that honours the key applies each one once.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  spawnWorker,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { startHttpSink, startSmtpSink, type HttpSink, type SmtpSink } from '../support/sinks';

const items = 40;

describe('worker crash', () => {
  let h: Harness;
  let http: HttpSink;
  let smtp: SmtpSink;
  const workers: ChildProcess[] = [];

  before(async () => {
    http = await startHttpSink();
    smtp = await startSmtpSink();
    h = await createHarness({ worker: false }); // this suite's runs go to worker processes
  });
  after(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await h?.close();
    await http?.close();
    await smtp?.close();
  });

  function startWorker(): ChildProcess {
    const child = spawnWorker(h, { CADRE_HTTP_ALLOW_HOSTS: '127.0.0.1', SMTP_URL: smtp.url });
    workers.push(child);
    return child;
  }

  it('finishes the run on another worker after SIGKILL: every item reaches the SMTP server and the HTTP sink', async () => {
    const ws = (await createTestWorkspace(h)).workspace.id;
    const agent = await createLiveAgent(h, ws, {
      name: 'crash',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'mail' },
        {
          kind: 'tool',
          id: 'mail',
          tool: 'email.send',
          arguments: { to: '{{email}}', subject: 'Item {{n}}', text: 'hello' },
          next: 'post',
        },
        {
          kind: 'tool',
          id: 'post',
          tool: 'http.request',
          arguments: { method: 'POST', url: `${http.url}/sink`, body: { n: '{{n}}' } },
        },
      ],
      policy: { concurrency: 4 },
    });
    const input = JSON.stringify(Array.from({ length: items }, (_, n) => ({ n, email: `u${n}@example.com` })));
    const first = startWorker();
    const run = await startTestRun(h, ws, agent.id, input);
    await waitForRun(h, run.id, (r) => Number(r.done) >= 5, 40_000);
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const doneAtKill = Number((await h.stack.knex('runs').where({ id: run.id }).first()).done);
    assert.ok(doneAtKill < items, 'the kill came mid-run');

    startWorker();
    const done = await waitForRun(h, run.id, undefined, 180_000);
    assert.equal(
      done.status,
      'completed',
      `run ended ${done.status}: ${done.error}; ${JSON.stringify(await h.stack.knex('run_items').where({ run_id: run.id }).whereNot({ status: 'done' }).select('seq', 'status', 'error'))}`,
    );
    assert.equal(done.done, items);

    // Nothing lost: every item's email and call arrived.
    const recipients = new Set(smtp.messages.flatMap((m) => m.to));
    assert.equal(recipients.size, items);
    const keys = new Set(http.requests.map((r) => r.idempotencyKey));
    assert.equal(keys.size, items);
    // Nothing applied twice: a repeat can only be the same item's retry, under that item's own key.
    for (const r of http.requests) assert.equal(r.idempotencyKey, `${run.id}:${(r.body as { n: number }).n}:post`);
    const messageIds = smtp.messages.map((m) => /Message-ID: <([^>]+)>/i.exec(m.raw)?.[1]);
    assert.equal(new Set(messageIds).size, items);
    const repeats = http.requests.length - keys.size + (smtp.messages.length - items);
    console.log(
      `      (${doneAtKill} items done at the kill; ${repeats} repeated deliveries, each under its item's key)`,
    );
  });
});
