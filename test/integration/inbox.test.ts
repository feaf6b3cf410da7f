// The Inbox end to end over real SMTP: nodemailer delivers to Cadre's own listener, the message starts a run of
// the agent it was addressed to, the run's email.reply waits for a reviewer, and the approved (or edited) reply
// reaches a recording SMTP server (SMTP_URL) as a reply in the same thread. Also what the listener refuses, a
// redelivered message, a paused agent, and what a message brings along (HTML, attachments, SPF/DKIM results), and
// Cadre's own SPF/DKIM/DMARC verdict on it, against DNS records the test serves (test/support/dns.ts).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { createTransport, type SendMailOptions } from 'nodemailer';
import { simpleParser, type ParsedMail } from 'mailparser';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../support/connections';
import { startSmtpSink, type SmtpSink } from '../support/sinks';
import { dkimKey, fakeDns } from '../support/dns';
import { readMessage, startInboxListener, type InboxListener } from '../../services/inbox/smtp-listener';
import { createLogger } from '../../api/logger';
import { externalToolHandlers } from '../../activities/tools/handlers';
import { toolContext } from '../../activities/tools/context';

const domain = 'inbox.test';

const helpDesk = (name: string) => ({
  name,
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'reply' },
    {
      kind: 'tool',
      id: 'reply',
      tool: 'email.reply',
      arguments: { thread_id: '{{thread_id}}', text: 'Thanks, we got {{subject}}' },
    },
  ],
});

/** An agent that needs no reviewer: it counts the requests it gets. */
const counter = (name: string) => ({
  name,
  nodes: [
    { kind: 'input', id: 'in', format: 'json', next: 'count' },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'requests' } },
  ],
});

describe('the Inbox (SMTP in, run, approved reply out)', function () {
  this.timeout(120_000);
  let h: Harness;
  let sink: SmtpSink;
  let listener: InboxListener;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let ws: string;
  const dns = fakeDns();

  before(async () => {
    sink = await startSmtpSink();
    const inbox = { smtpPort: undefined, smtpHost: '127.0.0.1', domain, maxBytes: 64 * 1024, tls: undefined };
    h = await createHarness({ config: { smtp: { url: sink.url, from: 'Cadre <cadre@test>' }, inbox } });
    listener = await startInboxListener(
      { knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig, resolver: dns.resolver },
      { ...inbox, smtpPort: 0 },
    );
    const made = await createTestWorkspace(h);
    ws = made.workspace.id;
    api = await startApi(h);
    c = connectorApi(h, api.url, made.key, ws);
  });
  after(async () => {
    await api?.close();
    await listener?.close();
    await h?.close();
    await sink?.close();
  });

  /** Delivers as a mail server would, to the listener. */
  const send = (mail: SendMailOptions) =>
    createTransport({ host: '127.0.0.1', port: listener.port, secure: false, ignoreTLS: true }).sendMail(mail);

  const inboxOf = async (agentId: string) => {
    const res = await c.call('GET', `/agents/${agentId}/inbox`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as { address: string; data: Json[] };
  };
  /** Polls the agent's threads until `predicate` holds. */
  async function eventually(agentId: string, predicate: (threads: Json[]) => boolean): Promise<Json[]> {
    for (let i = 0; i < 300; i++) {
      const { data } = await inboxOf(agentId);
      if (predicate(data)) return data;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the agent's inbox never got there: ${JSON.stringify((await inboxOf(agentId)).data)}`);
  }
  const thread = async (id: string) => (await c.call('GET', `/inbox/threads/${id}`)).body;
  async function sentReply(count: number): Promise<ParsedMail> {
    for (let i = 0; i < 300 && sink.messages.length < count; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(sink.messages.length, count, 'the reply was not sent');
    return simpleParser(sink.messages[count - 1].raw);
  }

  it('a request starts a run whose reply, approved and then edited, goes out in the same thread', async () => {
    const agent = await createLiveAgent(h, ws, helpDesk('Help Desk'));
    const { address } = await inboxOf(agent.id);
    assert.match(address, new RegExp(`^help-desk-[0-9a-f]{8}@${domain.replace('.', '\\.')}$`));

    await send({
      from: 'Carla Customer <carla@example.com>',
      to: address,
      subject: 'Order 42 never arrived',
      messageId: '<order-42@example.com>',
      text: 'Hello, my order 42 has not arrived yet.',
    });
    const [first] = await eventually(agent.id, (t) => t.length === 1 && t[0].runs.length === 1);
    const runId = first.runs[0].id as string;
    assert.equal(first.subject, 'Order 42 never arrived');
    const run = await h.stack.knex('runs').where({ id: runId }).first();
    assert.equal(run.trigger, 'inbox');
    const [item] = JSON.parse(run.input);
    assert.deepEqual(item, {
      thread_id: first.id,
      message_id: '<order-42@example.com>',
      from: '"Carla Customer" <carla@example.com>',
      subject: 'Order 42 never arrived',
      text: 'Hello, my order 42 has not arrived yet.',
      attachments: [],
    });

    // The reply waits for a reviewer: nothing is sent before the approval.
    const approval = await c.waitForApproval(runId);
    assert.equal(approval.tool, 'email.reply');
    assert.equal(sink.messages.length, 0);
    assert.equal((await thread(first.id)).messages[0].run.status, 'needs_review');
    await c.decide(approval.id, 'approve');
    assert.equal((await waitForRun(h, runId)).status, 'completed');

    const reply = await sentReply(1);
    assert.equal(reply.from?.value[0].address, address);
    assert.deepEqual(sink.messages[0].to, ['carla@example.com']);
    assert.equal(reply.subject, 'Re: Order 42 never arrived');
    assert.equal(reply.inReplyTo, '<order-42@example.com>');
    assert.deepEqual([reply.references].flat(), ['<order-42@example.com>']);
    assert.equal(reply.text?.trim(), 'Thanks, we got Order 42 never arrived');

    const shown = await thread(first.id);
    assert.equal(shown.address, address);
    assert.deepEqual(
      shown.messages.map((m: Json) => [
        m.direction,
        m.from.includes(address) || m.from.includes('carla'),
        m.run?.status,
      ]),
      [
        ['inbound', true, 'completed'],
        ['outbound', true, 'completed'],
      ],
    );
    assert.equal(shown.messages[1].message_id, reply.messageId);
    // example.com publishes nothing in the test's DNS; Cadre's own replies are not verified.
    assert.deepEqual(
      shown.messages.map(
        (m: Json) => m.verification && [m.verification.spf, m.verification.dkim, m.verification.dmarc],
      ),
      [['none', 'none', 'none'], null],
    );
    assert.equal(shown.messages[1].text, 'Thanks, we got Order 42 never arrived');

    // The customer answers the reply: the same thread, a second run; the reviewer edits this reply before it goes.
    await send({
      from: 'Carla Customer <carla@example.com>',
      to: address,
      subject: 'Re: Order 42 never arrived',
      messageId: '<order-42-again@example.com>',
      inReplyTo: reply.messageId,
      references: ['<order-42@example.com>', reply.messageId!],
      text: 'Any news?',
    });
    const [again] = await eventually(agent.id, (t) => t.length === 1 && t[0].runs.length === 2);
    assert.equal(again.id, first.id);
    const second = again.runs[1].id as string;
    const pending = await c.waitForApproval(second);
    assert.equal(pending.arguments.text, 'Thanks, we got Re: Order 42 never arrived');
    const edited = await c.call('POST', `/approvals/${pending.id}/decision`, {
      decision: 'approve_with_edits',
      arguments: { thread_id: first.id, text: 'It left our warehouse today; sorry for the wait.' },
    });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    assert.equal((await waitForRun(h, second)).status, 'completed');

    const editedReply = await sentReply(2);
    assert.equal(editedReply.text?.trim(), 'It left our warehouse today; sorry for the wait.');
    assert.equal(editedReply.subject, 'Re: Order 42 never arrived');
    assert.equal(editedReply.inReplyTo, '<order-42-again@example.com>');
    assert.deepEqual([editedReply.references].flat(), [
      '<order-42@example.com>',
      reply.messageId,
      '<order-42-again@example.com>',
    ]);
    const all = (await thread(first.id)).messages as Json[];
    assert.deepEqual(
      all.map((m) => m.direction),
      ['inbound', 'outbound', 'inbound', 'outbound'],
    );
    assert.equal(all[3].text, 'It left our warehouse today; sorry for the wait.');
    assert.equal((await inboxOf(agent.id)).data[0].last_message.direction, 'outbound');

    // The reply step retried after it sent (a worker lost before it reported): nothing more goes out or is stored.
    const replyAgain = (runId: string, key: string, threadId: string) =>
      externalToolHandlers['email.reply']!(
        { thread_id: threadId, text: 'a second copy' },
        toolContext({ knex: h.stack.knex, config: h.config }, { runId, key, connections: [] }),
      );
    const repeated = (await replyAgain(second, `${second}:0:reply`, first.id)) as Json;
    assert.equal(repeated.message_id, editedReply.messageId);
    assert.equal(sink.messages.length, 2);
    assert.equal((await thread(first.id)).messages.length, 4);

    // A run of another agent cannot reply in this agent's thread.
    const otherRun = await c.runOf(counter('Other desk'), [{ a: 1 }]);
    await assert.rejects(
      replyAgain(otherRun.started.id, `${otherRun.started.id}:0:x`, first.id),
      /has no Inbox thread/,
    );
    assert.equal(sink.messages.length, 2);
  });

  it('refuses mail for an address no agent has, or for another domain, while the sender is connected', async () => {
    await assert.rejects(
      send({ from: 'x@example.com', to: `nobody-0badc0de@${domain}`, subject: 'hi', text: 'hi' }),
      (err: { responseCode?: number; response?: string }) =>
        err.responseCode === 550 && /no agent has the address nobody-0badc0de@inbox\.test/.test(err.response ?? ''),
    );
    await assert.rejects(
      send({ from: 'x@example.com', to: 'someone@elsewhere.test', subject: 'hi', text: 'hi' }),
      (err: { responseCode?: number; response?: string }) =>
        err.responseCode === 550 && /only for @inbox\.test/.test(err.response ?? ''),
    );
  });

  it('refuses a message over the size limit with 552 and keeps nothing of it', async () => {
    const agent = await createLiveAgent(h, ws, counter('Big mail'));
    const { address } = await inboxOf(agent.id);
    // 4 MB against the listener's 64 kB: read to its end, then refused.
    await assert.rejects(
      send({
        from: 'x@example.com',
        to: address,
        subject: 'huge',
        text: 'see attached',
        attachments: [{ filename: 'big.bin', content: Buffer.alloc(4 * 1024 * 1024, 7) }],
      }),
      (err: { responseCode?: number; response?: string }) =>
        err.responseCode === 552 && /over the 0\.1 MB this inbox takes/.test(err.response ?? ''),
    );
    assert.deepEqual((await inboxOf(agent.id)).data, []);
    assert.equal((await h.stack.knex('inbox_messages').where({ agent_id: agent.id })).length, 0);
    assert.equal((await h.stack.knex('runs').where({ agent_id: agent.id })).length, 0);
    // The listener is still there for the next message.
    await send({ from: 'x@example.com', to: address, subject: 'small', text: 'fits' });
    await eventually(agent.id, (t) => t.length === 1 && t[0].subject === 'small');
  });

  it('keeps no more than the size limit of an oversize message in memory, and reads it to its end', async () => {
    // A data stream as smtp-server hands it over: sizeExceeded is set as soon as the count passes its `size`.
    const limit = 1024 * 1024;
    const stream = new PassThrough() as PassThrough & { sizeExceeded?: boolean };
    stream.sizeExceeded = false;
    const chunk = Buffer.alloc(64 * 1024, 1);
    let written = 0;
    const writing = (async () => {
      for (let i = 0; i < 256; i++) {
        written += chunk.length;
        if (written > limit) stream.sizeExceeded = true;
        if (!stream.write(chunk)) await new Promise((r) => stream.once('drain', r));
      }
      stream.end();
    })();
    const kept = await readMessage(stream, limit);
    await writing;
    assert.equal(written, 16 * 1024 * 1024);
    assert.equal(kept.exceeded, true);
    assert.equal(kept.raw.length, 0, 'nothing of an oversize message is kept');
    assert.equal(stream.readableEnded, true, 'the stream was read to its end, so the sender gets its answer');

    const small = new PassThrough() as PassThrough & { sizeExceeded?: boolean };
    small.end('Subject: hi\r\n\r\nhello\r\n');
    assert.deepEqual(await readMessage(small, limit), {
      raw: Buffer.from('Subject: hi\r\n\r\nhello\r\n'),
      exceeded: false,
    });
  });

  it('refuses mail that cannot be read for good (5xx, with the reason), logs a warning, and starts nothing', async () => {
    const lines: { level: number; msg: string; reason?: string }[] = [];
    const logger = createLogger('info', 'web', { write: (line: string) => void lines.push(JSON.parse(line)) });
    // 1 MB, as the listener: each poison message fits, so it is its content that is refused.
    const poisonListener = await startInboxListener(
      { knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig, resolver: dns.resolver, logger },
      { smtpPort: 0, smtpHost: '127.0.0.1', domain, maxBytes: 1024 * 1024, tls: undefined },
    );
    try {
      const agent = await createLiveAgent(h, ws, counter('Poison desk'));
      const { address } = await inboxOf(agent.id);
      const head = `From: x@example.com\r\nTo: ${address}\r\nMessage-ID: <${randomUUID()}@example.com>\r\n`;
      let nested = `${head}Subject: nested\r\n`;
      for (let i = 0; i < 3000; i++) nested += `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`;
      nested += 'Content-Type: text/plain\r\n\r\nhello\r\n';
      for (let i = 2999; i >= 0; i--) nested += `--b${i}--\r\n`;
      let attachments = `${head}Subject: attachments\r\nContent-Type: multipart/mixed; boundary="B"\r\n\r\n`;
      for (let i = 0; i < 5000; i++)
        attachments += `--B\r\nContent-Disposition: attachment; filename="a${i}"\r\n\r\nx\r\n`;
      attachments += '--B--\r\n';
      const nulByte = `${head}Subject: a NUL\u0000here\r\n\r\nhello\r\n`;
      const poison: [string, string | SendMailOptions, RegExp][] = [
        ['3,000 nested multiparts', nested, /more than 1000 MIME parts/],
        ['5,000 attachments', attachments, /more than 1000 MIME parts/],
        ['a NUL byte in a header', nulByte, /contains a NUL character/],
        // Encoded (=?UTF-8?Q?…=00…?=), the NUL only appears once the header is decoded.
        [
          'an encoded NUL in the subject',
          { from: 'x@example.com', to: address, subject: 'encoded \u0000 NUL', text: 'hello' },
          /a header contains a NUL character/,
        ],
      ];
      for (const [what, mail, reason] of poison) {
        assert.ok(typeof mail !== 'string' || mail.length < 1024 * 1024, what);
        const transport = createTransport({
          host: '127.0.0.1',
          port: poisonListener.port,
          secure: false,
          ignoreTLS: true,
        });
        await assert.rejects(
          transport.sendMail(
            typeof mail === 'string' ? { envelope: { from: 'x@example.com', to: [address] }, raw: mail } : mail,
          ),
          (err: { responseCode?: number; response?: string }) => {
            assert.equal(err.responseCode, 554, `${what}: ${err.response}`);
            assert.match(err.response ?? '', reason, what);
            return true;
          },
          what,
        );
      }
      assert.deepEqual((await inboxOf(agent.id)).data, []);
      assert.equal((await h.stack.knex('inbox_messages').where({ agent_id: agent.id })).length, 0);
      assert.equal((await h.stack.knex('runs').where({ agent_id: agent.id })).length, 0);
      const refusals = lines.filter((l) => l.msg === 'inbox: message refused');
      assert.equal(refusals.length, poison.length, JSON.stringify(lines));
      assert.ok(
        refusals.every((l) => l.level === 40 && /^5\.6\.0 the message cannot be read/.test(l.reason ?? '')),
        JSON.stringify(refusals),
      );
      assert.deepEqual(
        lines.filter((l) => l.level >= 50),
        [],
        'no errors logged',
      );
    } finally {
      await poisonListener.close();
    }
  });

  it('stores a redelivered message once and starts one run for it', async () => {
    const agent = await createLiveAgent(h, ws, counter('Dedupe desk'));
    const { address } = await inboxOf(agent.id);
    const mail = { from: 'x@example.com', to: address, subject: 'twice', messageId: `<${randomUUID()}@x>`, text: 'x' };
    await send(mail);
    await send(mail);
    const [only] = await eventually(agent.id, (t) => t.length === 1 && t[0].runs.length === 1);
    assert.equal(only.message_count, 1);
    await waitForRun(h, only.runs[0].id);
    assert.equal((await h.stack.knex('runs').where({ agent_id: agent.id })).length, 1);
  });

  it('keeps mail for a paused agent in its thread, saying why no run started', async () => {
    const agent = await createLiveAgent(h, ws, counter('Paused desk'));
    const { address } = await inboxOf(agent.id);
    assert.equal((await c.call('POST', `/agents/${agent.id}/state`, { state: 'paused' })).status, 200);
    await send({ from: 'x@example.com', to: address, subject: 'while paused', text: 'are you there?' });
    const [kept] = await eventually(agent.id, (t) => t.length === 1);
    assert.deepEqual(kept.runs, []);
    const [message] = (await thread(kept.id)).messages;
    assert.equal(message.run, null);
    assert.match(message.note, /the agent is paused: the message is kept, and no run was started/);
    assert.equal((await h.stack.knex('runs').where({ agent_id: agent.id })).length, 0);
    const timeline = (await c.call('GET', `/agents/${agent.id}/timeline`)).body.data as Json[];
    assert.ok(
      timeline.some(
        (e) => e.kind === 'trigger_skipped' && /mail from x@example.com \("while paused"\) kept/.test(e.message),
      ),
      JSON.stringify(timeline),
    );
  });

  it('reads an HTML-only message as text, keeps SPF/DKIM results, and stores attachments as run files', async () => {
    const agent = await createLiveAgent(h, ws, counter('Invoices desk'));
    const { address } = await inboxOf(agent.id);
    await send({
      from: 'billing@example.com',
      to: address,
      subject: 'Invoice 7',
      html: '<p>Please find <b>invoice 7</b> attached.</p>',
      headers: { 'Authentication-Results': 'mx.inbox.test; spf=pass smtp.mailfrom=example.com; dkim=pass' },
      attachments: [{ filename: 'invoice-7.csv', content: 'item,amount\nwidgets,12\n', contentType: 'text/csv' }],
    });
    const [t] = await eventually(agent.id, (x) => x.length === 1 && x[0].runs.length === 1);
    const runId = t.runs[0].id as string;
    assert.equal((await waitForRun(h, runId)).status, 'completed');
    const [message] = (await thread(t.id)).messages;
    assert.equal(message.text, 'Please find invoice 7 attached.');
    assert.match(message.authentication_results, /spf=pass .*dkim=pass/);
    assert.deepEqual(message.attachments, ['invoice-7.csv']);
    assert.deepEqual(JSON.parse((await h.stack.knex('runs').where({ id: runId }).first()).input)[0].attachments, [
      'invoice-7.csv',
    ]);
    const files = await h.stack.knex('files').where({ run_id: runId });
    assert.deepEqual(
      files.map((f) => [f.name, Buffer.from(f.content).toString()]),
      [['invoice-7.csv', 'item,amount\nwidgets,12\n']],
    );
  });

  describe("Cadre's own SPF, DKIM and DMARC verdict", () => {
    // signed.example.com signs its mail, lets 127.0.0.1 send for it, and publishes a DMARC policy.
    const signer = 'signed.example.com';
    const key = dkimKey();
    const dkim = { domainName: signer, keySelector: 'mail2026', privateKey: key.privateKey };
    before(() => {
      dns.txt(signer, 'v=spf1 ip4:127.0.0.1 -all');
      dns.txt(`mail2026._domainkey.${signer}`, key.record);
      dns.txt(`_dmarc.${signer}`, 'v=DMARC1; p=reject');
      // forged.example.net sends only from 192.0.2.10 and wants the rest rejected.
      dns.txt('forged.example.net', 'v=spf1 ip4:192.0.2.10 -all');
      dns.txt('_dmarc.forged.example.net', 'v=DMARC1; p=reject');
    });

    /** The agent's one request once its run completed: as the API shows it, and its stored row. */
    async function received(agentId: string) {
      const [t] = await eventually(agentId, (x) => x.length === 1 && x[0].runs.length === 1);
      assert.equal((await waitForRun(h, t.runs[0].id)).status, 'completed', 'a failing verdict still starts its run');
      const [message] = (await thread(t.id)).messages as Json[];
      const row = await h.stack.knex('inbox_messages').where({ id: message.id }).first();
      return { message, row };
    }
    const words = (m: Json) => [m.verification.spf, m.verification.dkim, m.verification.dmarc];
    const stored = (row: Json) => [row.spf_result, row.dkim_result, row.dmarc_result];

    it('passes a message DKIM-signed by a domain whose SPF allows the sending host', async () => {
      const agent = await createLiveAgent(h, ws, counter('Verified desk'));
      const { address } = await inboxOf(agent.id);
      await createTransport({ host: '127.0.0.1', port: listener.port, secure: false, ignoreTLS: true, dkim }).sendMail({
        from: `Sam Sender <sam@${signer}>`,
        to: address,
        subject: 'Signed request',
        text: 'Please send the report.',
      });
      const { message, row } = await received(agent.id);
      assert.deepEqual(words(message), ['pass', 'pass', 'pass']);
      assert.deepEqual(stored(row), ['pass', 'pass', 'pass']);
      const header = message.verification.authentication_results as string;
      assert.equal(row.verified_authentication_results, header);
      assert.match(header, /^inbox\.test; /);
      assert.match(header, /dkim=pass header\.i=@signed\.example\.com header\.s=mail2026/);
      assert.match(header, /spf=pass .*smtp\.mailfrom=sam@signed\.example\.com/);
      assert.match(header, /dmarc=pass \(p=REJECT/);
      assert.equal(message.authentication_results, null, 'the message itself came with no such header');
    });

    it('fails DKIM for a message whose body was changed after it was signed', async () => {
      const agent = await createLiveAgent(h, ws, counter('Tampered desk'));
      const { address } = await inboxOf(agent.id);
      const signed = await createTransport({ streamTransport: true, buffer: true, dkim }).sendMail({
        from: `Sam Sender <sam@${signer}>`,
        to: address,
        subject: 'Invoice 8',
        text: 'Please pay invoice 8 to account 1234.',
      });
      const raw = (signed.message as Buffer).toString();
      const tampered = raw.replace('account 1234', 'account 6666');
      assert.notEqual(tampered, raw);
      await createTransport({ host: '127.0.0.1', port: listener.port, secure: false, ignoreTLS: true }).sendMail({
        envelope: { from: `sam@${signer}`, to: [address] },
        raw: tampered,
      });
      const { message, row } = await received(agent.id);
      assert.equal(message.text, 'Please pay invoice 8 to account 6666.');
      // SPF still passes for the sending host, and so DMARC (aligned SPF) does: only the signature is broken.
      assert.deepEqual(words(message), ['pass', 'fail', 'pass']);
      assert.deepEqual(stored(row), ['pass', 'fail', 'pass']);
      assert.match(message.verification.authentication_results, /dkim=fail \(body hash did not verify\)/);
    });

    it('fails SPF for a host the domain does not allow, whatever the message says of itself', async () => {
      const agent = await createLiveAgent(h, ws, counter('Forged desk'));
      const { address } = await inboxOf(agent.id);
      const forgedHeader = 'mx.inbox.test; spf=pass smtp.mailfrom=forged.example.net; dkim=pass; dmarc=pass';
      await send({
        from: 'The CEO <ceo@forged.example.net>',
        to: address,
        subject: 'Urgent transfer',
        text: 'Wire the money today.',
        headers: { 'Authentication-Results': forgedHeader },
      });
      const { message, row } = await received(agent.id);
      assert.deepEqual(words(message), ['fail', 'none', 'fail']);
      assert.deepEqual(stored(row), ['fail', 'none', 'fail']);
      assert.match(
        message.verification.authentication_results,
        /spf=fail \(inbox\.test: domain of ceo@forged\.example\.net does not designate 127\.0\.0\.1 as permitted sender\)/,
      );
      // The header the sender wrote is kept as it came, beside Cadre's verdict.
      assert.equal(message.authentication_results, forgedHeader);
    });
  });

  it('offers STARTTLS with the configured key and certificate', async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inbox-tls-'));
    const [keyPath, certPath] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
    try {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${domain}`].concat([
          '-keyout',
          keyPath,
          '-out',
          certPath,
        ]),
        { stdio: 'ignore' },
      );
    } catch {
      this.skip(); // no openssl to make a certificate with
    }
    const secure = await startInboxListener(
      { knex: h.stack.knex, temporal: h.client, temporalConfig: h.temporalConfig, resolver: dns.resolver },
      { smtpPort: 0, smtpHost: '127.0.0.1', domain, maxBytes: 64 * 1024, tls: { keyPath, certPath } },
    );
    try {
      const agent = await createLiveAgent(h, ws, counter('TLS desk'));
      const { address } = await inboxOf(agent.id);
      // requireTLS: the send fails unless the listener offers STARTTLS and the session is encrypted.
      await createTransport({
        host: '127.0.0.1',
        port: secure.port,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
      }).sendMail({ from: 'x@example.com', to: address, subject: 'over TLS', text: 'sealed' });
      const [t] = await eventually(agent.id, (x) => x.length === 1);
      assert.equal(t.subject, 'over TLS');
    } finally {
      await secure.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers 404 for a thread of no agent in the workspace', async () => {
    const res = await c.call('GET', `/inbox/threads/${randomUUID()}`);
    assert.equal(res.status, 404);
    assert.match(res.body.detail, /no Inbox thread/);
  });
});
