// The Inbox's guards against mail loops, over real SMTP as in inbox.test.ts: an agent that answers every message
// without a reviewer does not answer mail from an address of the Inbox itself (its own, another agent's), nor mail a
// machine sent (Auto-Submitted, Precedence: bulk | list | junk), and sends at most so many replies in one thread an
// hour. Its replies say they are automatic (Auto-Submitted: auto-replied). A withheld reply is no failure: the run
// completes, and the message it would have answered says why none was sent.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTransport, type SendMailOptions } from 'nodemailer';
import { simpleParser } from 'mailparser';
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
import { fakeDns } from '../support/dns';
import { startInboxListener, type InboxListener } from '../../services/inbox/smtp-listener';
import { maxRepliesPerThreadPerHour } from '../../model/inbox';

const domain = 'inbox.test';

/** An agent that answers every message at once, with no reviewer in between: what a loop needs. */
const autoReplier = (name: string) => ({
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
  policy: { approvals: { 'email.reply': { mode: 'never' } } },
});

describe('the Inbox does not mail in loops', function () {
  this.timeout(180_000);
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

  const addressOf = async (agentId: string) => {
    const res = await c.call('GET', `/agents/${agentId}/inbox`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.address as string;
  };
  const thread = async (id: string) => (await c.call('GET', `/inbox/threads/${id}`)).body;

  /** Sends the message and waits for the run it starts to end: the thread and its message as the API shows them. */
  async function deliverAndRun(agentId: string, mail: SendMailOptions & { messageId: string }) {
    await send(mail);
    for (let i = 0; i < 600; i++) {
      const threads = (await c.call('GET', `/agents/${agentId}/inbox`)).body.data as Json[];
      for (const t of threads) {
        const message = ((await thread(t.id as string)).messages as Json[]).find(
          (m) => m.message_id === mail.messageId,
        );
        if (message?.run) {
          assert.equal((await waitForRun(h, message.run.id as string)).status, 'completed');
          const shown = await thread(t.id as string);
          return { thread: shown, message: (shown.messages as Json[]).find((m) => m.message_id === mail.messageId)! };
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no run started for ${mail.messageId}`);
  }
  const sentTo = (address: string) => sink.messages.filter((m) => m.to.includes(address));
  const messageId = () => `<${randomUUID()}@example.com>`;

  it("answers no mail from the Inbox's own addresses: the agent's own, or another agent's", async () => {
    const desk = await createLiveAgent(h, ws, autoReplier('Loop desk'));
    const other = await createLiveAgent(h, ws, autoReplier('Other desk'));
    const own = await addressOf(desk.id);
    const others = await addressOf(other.id);

    const toItself = await deliverAndRun(desk.id, {
      from: own,
      to: own,
      subject: 'to myself',
      messageId: messageId(),
      text: 'x',
    });
    assert.match(toItself.message.note, /^no reply was sent: .* is an address of this Inbox/);
    const fromOther = await deliverAndRun(desk.id, {
      from: `Other desk <${others}>`,
      to: own,
      subject: 'from another agent',
      messageId: messageId(),
      text: 'x',
    });
    assert.match(fromOther.message.note, /^no reply was sent: .* is an address of this Inbox/);
    assert.deepEqual(sentTo(own), []);
    assert.deepEqual(sentTo(others), [], 'nothing went out: the loop never began');
    assert.deepEqual(
      [toItself.thread, fromOther.thread].map((t) => (t.messages as Json[]).map((m) => m.direction)),
      [['inbound'], ['inbound']],
    );
  });

  it('answers no mail a machine sent (Auto-Submitted, Precedence: bulk, list, junk), and marks its own replies', async () => {
    const desk = await createLiveAgent(h, ws, autoReplier('Auto desk'));
    const address = await addressOf(desk.id);
    const machine = [
      { 'Auto-Submitted': 'auto-replied' },
      { 'Auto-Submitted': 'auto-generated; owner-email="ops@example.com"' },
      { Precedence: 'bulk' },
      { Precedence: 'list' },
      { Precedence: 'junk' },
    ];
    for (const [i, headers] of machine.entries()) {
      const from = `robot-${i}@example.com`;
      const { message } = await deliverAndRun(desk.id, {
        from,
        to: address,
        subject: `notice ${i}`,
        messageId: messageId(),
        headers,
        text: 'an automatic notice',
      });
      assert.match(
        message.note,
        /^no reply was sent: the message was sent automatically \((auto-submitted|precedence): /,
      );
      assert.deepEqual(sentTo(from), [], JSON.stringify(headers));
    }

    // A person's mail (Auto-Submitted: no says so) is answered, by a reply that says it is automatic.
    const { message } = await deliverAndRun(desk.id, {
      from: 'person@example.com',
      to: address,
      subject: 'a question',
      messageId: messageId(),
      headers: { 'Auto-Submitted': 'no' },
      text: 'hello?',
    });
    assert.equal(message.note, null);
    const [reply] = sentTo('person@example.com');
    assert.ok(reply, 'the reply went out');
    const parsed = await simpleParser(reply.raw);
    assert.equal(parsed.headers.get('auto-submitted'), 'auto-replied');
    assert.equal(parsed.subject, 'Re: a question');
  });

  it(`sends at most ${maxRepliesPerThreadPerHour} replies in one thread an hour`, async () => {
    const desk = await createLiveAgent(h, ws, autoReplier('Chatty desk'));
    const address = await addressOf(desk.id);
    // A responder that says nothing of being one, answering every reply: each of its messages is in the thread.
    const first = messageId();
    const notes: (string | null)[] = [];
    for (let i = 0; i <= maxRepliesPerThreadPerHour; i++) {
      const id = i === 0 ? first : messageId();
      const { message } = await deliverAndRun(desk.id, {
        from: 'responder@example.com',
        to: address,
        subject: i === 0 ? 'ping' : 'Re: ping',
        messageId: id,
        ...(i === 0 ? {} : { inReplyTo: first, references: [first] }),
        text: `ping ${i}`,
      });
      notes.push(message.note as string | null);
    }
    assert.equal(sentTo('responder@example.com').length, maxRepliesPerThreadPerHour);
    assert.deepEqual(notes.slice(0, -1), Array(maxRepliesPerThreadPerHour).fill(null));
    assert.match(notes.at(-1)!, /^no reply was sent: the agent has sent \d+ replies in this thread within the hour/);
  });
});
