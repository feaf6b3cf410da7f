// Chat Mode against the project's own Anthropic-compatible server (scripted answers over real HTTP, the production
// SDK as client, streaming): the fake's event stream read by the SDK, the tool loop (run an agent, then explain the
// run), the refusal to change configuration, roles, and the answer with no model configured.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { modelCostUsd } from '../../model/pricing';
import { chatTools } from '../../services/chat/tools';
import { runWorkflowId } from '../../model/run-identity';
import {
  reply,
  startFakeAnthropic,
  text,
  toolResultsOf,
  toolUse,
  type FakeAnthropic,
  type MessagesRequest,
} from '../fakes/anthropic';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import { memberWithRole } from '../support/people';

const modelName = 'claude-sonnet-4-6';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are checked field by field
type Json = any;
const json = (res: Response): Promise<Json> => res.json();

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Reads a text/event-stream answer whole into its events. */
async function readEvents(res: Response): Promise<SseEvent[]> {
  const body = await res.text();
  return body
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => {
      const [head, data] = block.split('\n');
      return { event: head.slice('event: '.length), data: JSON.parse(data.slice('data: '.length)) };
    });
}

/** The text of the last user turn the model was sent (a question, not tool results). */
const lastQuestion = (body: MessagesRequest) => {
  const last = body.messages[body.messages.length - 1];
  return typeof last.content === 'string' ? last.content : '';
};

describe('Chat Mode', function () {
  this.timeout(180_000);
  let fake: FakeAnthropic;
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let workspaceId: string;
  let agentId: string;

  before(async () => {
    fake = await startFakeAnthropic();
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: modelName, unavailableRetries: 0, retrySeconds: 0.1 },
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    workspaceId = t.workspace.id;
    agentId = (
      await createLiveAgent(h, workspaceId, {
        name: 'Invoice router',
        instructions: 'Route each invoice row.',
        nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }],
      })
    ).id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  const headers = () => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
  const post = (path: string, json: unknown, h2: Record<string, string> = headers()) =>
    fetch(`${api.url}/v1${path}`, { method: 'POST', headers: h2, body: JSON.stringify(json) });

  it('the fake answers stream: true with the API event stream, which the SDK reads piece by piece', async () => {
    fake.setHandler(() =>
      reply([text('Three runs failed yesterday, all on the same row.'), toolUse('get_run', { run_id: 'r1' })], {
        usage: { input_tokens: 120, output_tokens: 33 },
      }),
    );
    const sdk = new Anthropic({ apiKey: 'test-key', baseURL: fake.url, maxRetries: 0 });
    const stream = sdk.messages.stream({
      model: modelName,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'What failed?' }],
      tools: [{ name: 'get_run', input_schema: { type: 'object' } }],
    });
    const pieces: string[] = [];
    stream.on('text', (t) => pieces.push(t));
    const message = await stream.finalMessage();
    assert.ok(pieces.length > 1, `text arrived in ${pieces.length} piece(s)`);
    assert.equal(pieces.join(''), 'Three runs failed yesterday, all on the same row.');
    assert.equal(message.stop_reason, 'tool_use');
    assert.deepEqual(message.content[1], {
      type: 'tool_use',
      id: (message.content[1] as { id: string }).id,
      name: 'get_run',
      input: { run_id: 'r1' },
    });
    assert.equal(message.usage.input_tokens, 120);
    assert.equal(message.usage.output_tokens, 33);
    assert.equal(fake.requests[0].body.stream, true);
    // Non-streaming callers are answered as before.
    const plain = await sdk.messages.create({
      model: modelName,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(plain.content[0].type, 'text');
  });

  it('runs an agent when asked, then explains the run, with streamed text, links and usage', async () => {
    const conv = await json(await post('/chat/conversations', { agent_id: agentId }));
    assert.equal(conv.agent_id, agentId);
    assert.equal(conv.title, 'About Invoice router');

    let runId = '';
    fake.setHandler((body) => {
      const results = toolResultsOf(body);
      if (lastQuestion(body).startsWith('Run it'))
        return reply(
          [text('Starting it now.'), toolUse('start_run', { agent_id: agentId, input: '[{"n":1},{"n":2}]' })],
          {
            usage: { input_tokens: 1000, output_tokens: 50 },
          },
        );
      if (lastQuestion(body).startsWith('Why'))
        return reply([toolUse('explain_run', { run_id: runId })], { usage: { input_tokens: 1500, output_tokens: 20 } });
      const result = JSON.parse(String(results[0].content));
      if ('id' in result) {
        runId = result.id;
        return reply([text(`Run started: http://cadre.test/runs/${runId} with 2 items.`)], {
          usage: { input_tokens: 1200, output_tokens: 30 },
        });
      }
      return reply([text(`Both items were done (${result.items.length} items). See http://cadre.test/runs/${runId}`)], {
        usage: { input_tokens: 1800, output_tokens: 40 },
        streamDelayMs: 1,
      });
    });

    const res = await post(`/chat/conversations/${conv.id}/messages`, { text: 'Run it with two rows: n=1 and n=2' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = await readEvents(res);
    const names = events.map((e) => e.event);
    assert.ok(names.filter((n) => n === 'text').length > 1, names.join(','));
    assert.deepEqual(
      names.filter((n) => n !== 'text'),
      ['tool_call', 'tool_result', 'message'],
    );
    const call = events.find((e) => e.event === 'tool_call')!.data;
    assert.equal(call.name, 'start_run');
    assert.deepEqual(events.find((e) => e.event === 'tool_result')!.data.run_ids, [runId]);
    // The run went through the run service: a real run of the live agent, started as an API call (a key asked).
    const run = await h.stack.knex('runs').where({ id: runId }).first();
    assert.equal(run.agent_id, agentId);
    assert.equal(run.trigger, 'api');
    assert.equal(run.input, '[{"n":1},{"n":2}]');
    const done = await waitForRun(h, runId);
    assert.equal(done.status, 'completed');

    const first = events.find((e) => e.event === 'message')!.data as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(first.answer.text, `Starting it now.\n\nRun started: http://cadre.test/runs/${runId} with 2 items.`);
    assert.deepEqual(first.answer.runs, [
      { run_id: runId, console_url: `http://cadre.test/runs/${runId}`, api_url: `http://cadre.test/v1/runs/${runId}` },
    ]);
    assert.equal(first.conversation.title, 'Run it with two rows: n=1 and n=2');

    // A follow-up: the model is sent the whole conversation, tool calls included, and explains the run.
    const res2 = await post(`/chat/conversations/${conv.id}/messages`, { text: 'Why did it take two items?' });
    const events2 = await readEvents(res2);
    const explained = fake.requests.at(-1)!.body;
    assert.equal(explained.messages.length, 7); // q1, tool_use, tool_result, answer, q2, tool_use, tool_result
    const explainResult = JSON.parse(String(toolResultsOf(explained)[0].content));
    assert.equal(explainResult.run.id, runId);
    assert.ok(Array.isArray(explainResult.node_activity));
    assert.deepEqual(
      explainResult.items.map((i: { seq: number; status: string; data: unknown }) => [i.seq, i.status, i.data]),
      [
        [0, 'done', { n: 1 }],
        [1, 'done', { n: 2 }],
      ],
    );
    assert.match(String(explained.system), /agent "Invoice router"/);
    const second = events2.find((e) => e.event === 'message')!.data as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.match(second.answer.text, new RegExp(`runs/${runId}`));
    assert.deepEqual(
      second.answer.runs.map((r: { run_id: string }) => r.run_id),
      [runId],
    );

    // Kept: four messages, the usage of every model turn and its cost, priced like a run's.
    const kept = await json(await fetch(`${api.url}/v1/chat/conversations/${conv.id}`, { headers: headers() }));
    assert.deepEqual(
      kept.messages.map((m: { role: string }) => m.role),
      ['user', 'assistant', 'user', 'assistant'],
    );
    assert.equal(kept.messages[1].tool_calls[0].name, 'start_run');
    const tokens = { input_tokens: 1000 + 1200 + 1500 + 1800, output_tokens: 50 + 30 + 20 + 40, cache_read_tokens: 0 };
    assert.deepEqual(kept.usage, { ...tokens, cost_usd: modelCostUsd(modelName, tokens) });
    assert.ok(kept.usage.cost_usd > 0);
    const list = await json(await fetch(`${api.url}/v1/chat/conversations`, { headers: headers() }));
    assert.equal(list.data[0].id, conv.id);
    assert.deepEqual(list.model, { configured: true, name: modelName, hint: null });
  });

  it('cannot change configuration: no tool writes it, and a request to change an agent is pointed to Operator Mode', async () => {
    // Every tool only reads or runs; none of them is offered under a name that changes things.
    assert.deepEqual(
      chatTools.map((t) => `${t.name}:${t.effect}`),
      [
        'list_agents:read',
        'describe_agent:read',
        'start_run:run',
        'get_run:read',
        'explain_run:read',
        'pause_run:run',
        'resume_run:run',
        'retry_failed_items:run',
        'test_version_on_past_items:run',
        'list_pending_approvals:read',
        'decide_approval:run',
      ],
    );
    const before = await h.stack.knex('agents').where({ id: agentId }).first();
    const versions = await h.stack.knex('agent_versions').where({ agent_id: agentId }).count({ n: '*' }).first();
    fake.setHandler(() =>
      reply([
        text(
          `I can't change an agent's instructions from the chat. Open Operator Mode at http://cadre.test/agents/${agentId}/edit and change them there.`,
        ),
      ]),
    );
    const conv = await json(await post('/chat/conversations', {}));
    const events = await readEvents(
      await post(`/chat/conversations/${conv.id}/messages`, { text: 'Change its instructions to skip rows over 1000' }),
    );
    const sent = fake.requests[0].body;
    assert.deepEqual(
      sent.tools!.map((t) => t.name),
      chatTools.map((t) => t.name),
    );
    assert.match(String(sent.system), /cannot change configuration/);
    assert.match(String(sent.system), /Operator Mode/);
    const message = events.find((e) => e.event === 'message')!.data as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.match(message.answer.text, new RegExp(`/agents/${agentId}/edit`));
    assert.deepEqual(message.answer.tool_calls, []);
    // Nothing about the agent changed.
    const after = await h.stack.knex('agents').where({ id: agentId }).first();
    assert.deepEqual(after, before);
    assert.deepEqual(
      await h.stack.knex('agent_versions').where({ agent_id: agentId }).count({ n: '*' }).first(),
      versions,
    );
  });

  it("checks the caller's role: a viewer's request to run is refused, and a draft gets no real run", async () => {
    const viewer = await memberWithRole(h.stack.knex, api.url, workspaceId, 'viewer');
    const draft = await createLiveAgent(
      h,
      workspaceId,
      { name: 'Draft', nodes: [{ kind: 'input', id: 'in', next: null }] },
      'draft',
    );
    const runsBefore = await h.stack.knex('runs').where({ workspace_id: workspaceId }).count({ n: '*' }).first();
    fake.setHandler((body) => {
      const results = toolResultsOf(body);
      if (results.length) return reply([text(`It did not start: ${String(results[0].content)}`)]);
      const target = lastQuestion(body).includes('draft') ? draft.id : agentId;
      return reply([toolUse('start_run', { agent_id: target, input: '[]' })]);
    });
    const conv = await viewer.call('/chat/conversations', { method: 'POST', json: {} });
    assert.equal(conv.status, 201);
    const res = await fetch(`${api.url}/v1/chat/conversations/${conv.body.id}/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: [...viewer.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        'x-csrf-token': viewer.csrf!,
      },
      body: JSON.stringify({ text: 'Run the invoice router' }),
    });
    const refused = (await readEvents(res)).find((e) => e.event === 'tool_result')!.data;
    assert.equal(refused.is_error, true);
    assert.match(String(toolResultsOf(fake.requests.at(-1)!.body)[0].content), /viewer role does not allow start_run/);

    // With a key that may run: a draft agent is refused a real run, as by the API.
    const own = await json(await post('/chat/conversations', {}));
    await readEvents(await post(`/chat/conversations/${own.id}/messages`, { text: 'Run the draft' }));
    assert.match(String(toolResultsOf(fake.requests.at(-1)!.body)[0].content), /agent_not_live: the agent is draft/);
    assert.deepEqual(
      await h.stack.knex('runs').where({ workspace_id: workspaceId }).count({ n: '*' }).first(),
      runsBefore,
    );
    // Conversations are private: the viewer does not see the key's.
    const theirs = await viewer.call(`/chat/conversations/${own.id}`);
    assert.equal(theirs.status, 404);
  });

  it('lists what waits for approval and decides one when the person asks, as the approvals API would', async () => {
    const gated = await createLiveAgent(h, workspaceId, {
      name: 'Payments',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'gate' },
        { kind: 'approval', id: 'gate', message: 'Pay {{amount}}?', next: null },
      ],
    });
    const run = await startTestRun(h, workspaceId, gated.id, '[{"amount": 120}]');
    await waitForRun(h, run.id, (r) => r.status === 'needs_review');
    fake.setHandler((body) => {
      const results = toolResultsOf(body);
      if (!results.length) return reply([toolUse('list_pending_approvals', { run_id: run.id })]);
      const out = JSON.parse(String(results[0].content));
      if (Array.isArray(out))
        return reply([
          toolUse('decide_approval', { approval_id: out[0].id, decision: 'approve', comment: 'as asked' }),
        ]);
      return reply([text(`Approved: ${out.message}. http://cadre.test/runs/${run.id}`)]);
    });
    const conv = await json(await post('/chat/conversations', {}));
    const events = await readEvents(
      await post(`/chat/conversations/${conv.id}/messages`, { text: 'Approve the pending payment of 120' }),
    );
    const message = events.find((e) => e.event === 'message')!.data as Json;
    assert.deepEqual(
      message.answer.tool_calls.map((c: { name: string; is_error: boolean }) => [c.name, c.is_error]),
      [
        ['list_pending_approvals', false],
        ['decide_approval', false],
      ],
    );
    assert.deepEqual(
      message.answer.runs.map((r: { run_id: string }) => r.run_id),
      [run.id],
    );
    const approval = await h.stack.knex('approvals').where({ run_id: run.id }).first();
    assert.equal(approval.status, 'approved');
    assert.match(approval.decided_by, /in Chat Mode/);
    assert.equal((await waitForRun(h, run.id)).status, 'completed');
  });

  it('pauses and resumes a run when the person asks, as the API would, and the timeline names who asked', async () => {
    const gated = await createLiveAgent(h, workspaceId, {
      name: 'Payouts',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'gate' },
        { kind: 'approval', id: 'gate', message: 'Pay {{amount}}?', next: null },
      ],
    });
    const run = await startTestRun(h, workspaceId, gated.id, '[{"amount": 120}]');
    await waitForRun(h, run.id, (r) => r.status === 'needs_review');
    const ask = async (tool: string, words: string) => {
      fake.setHandler((body) => {
        const results = toolResultsOf(body);
        if (!results.length) return reply([toolUse(tool, { run_id: run.id })]);
        const out = JSON.parse(String(results[0].content));
        return reply([text(`The run is ${out.status}. http://cadre.test/runs/${run.id}`)]);
      });
      const conv = await json(await post('/chat/conversations', {}));
      const events = await readEvents(await post(`/chat/conversations/${conv.id}/messages`, { text: words }));
      const message = events.find((e) => e.event === 'message')!.data as Json;
      return message.answer.tool_calls.map((c: { name: string; is_error: boolean }) => [c.name, c.is_error]);
    };
    const statusOf = async () => (await h.stack.knex('runs').where({ id: run.id }).first()).status;

    assert.deepEqual(await ask('pause_run', 'Pause the payout run'), [['pause_run', false]]);
    assert.equal(await statusOf(), 'paused');
    assert.deepEqual(await ask('resume_run', 'Resume it'), [['resume_run', false]]);
    assert.equal(await statusOf(), 'needs_review');
    const events = await h.stack
      .knex('agent_events')
      .where({ run_id: run.id })
      .whereIn('kind', ['run_paused', 'run_resumed'])
      .orderBy('id');
    assert.deepEqual(
      events.map((e) => e.kind),
      ['run_paused', 'run_resumed'],
    );
    for (const e of events) assert.match(e.details.by, /in Chat Mode/);
    await h.client.workflow.getHandle(runWorkflowId(run.id)).cancel();
    assert.equal((await waitForRun(h, run.id)).status, 'cancelled');
  });

  it('with no model configured, begins no conversation and answers none, and says which setting to set', async () => {
    const noModel = await startApi({ ...h, config: { ...h.config, model: { ...h.config.model, apiKey: undefined } } });
    try {
      const before = await json(await fetch(`${noModel.url}/v1/chat/conversations`, { headers: headers() }));
      const begun = await fetch(`${noModel.url}/v1/chat/conversations`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({ agent_id: agentId }),
      });
      assert.equal(begun.status, 503);
      assert.match(begun.headers.get('content-type') ?? '', /problem\+json/);
      const refusal = await json(begun);
      assert.equal(refusal.code, 'model_not_configured');
      // The words the console's Chat page shows, so the API and the console say the same thing.
      assert.equal(refusal.detail, before.model.hint);
      assert.match(refusal.detail, /no model configured: set ANTHROPIC_API_KEY/);
      const after = await json(await fetch(`${noModel.url}/v1/chat/conversations`, { headers: headers() }));
      assert.deepEqual(
        after.data.map((c: Json) => c.id),
        before.data.map((c: Json) => c.id),
        'no conversation was made',
      );

      // One begun while a model was configured cannot be asked once it is gone.
      const conv = await json(await post('/chat/conversations', {}));
      const res = await fetch(`${noModel.url}/v1/chat/conversations/${conv.id}/messages`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({ text: 'hello' }),
      });
      assert.equal(res.status, 503);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      const problem = await json(res);
      assert.equal(problem.code, 'model_not_configured');
      assert.match(problem.detail, /no model configured: set ANTHROPIC_API_KEY/);
      assert.equal(after.model.configured, false);
      assert.match(after.model.hint, /ANTHROPIC_API_KEY/);
      assert.equal(fake.requests.length, 0);
    } finally {
      await noModel.close();
    }
  });

  it('refuses an empty question and an unknown conversation with a problem', async () => {
    const conv = await json(await post('/chat/conversations', {}));
    const empty = await post(`/chat/conversations/${conv.id}/messages`, { text: '  ' });
    assert.equal(empty.status, 422);
    assert.match((await json(empty)).detail, /ask something/);
    const unknown = await post('/chat/conversations/00000000-0000-4000-8000-000000000000/messages', { text: 'hi' });
    assert.equal(unknown.status, 404);
    const badAgent = await post('/chat/conversations', { agent_id: '00000000-0000-4000-8000-000000000000' });
    assert.equal(badAgent.status, 404);
  });
});
