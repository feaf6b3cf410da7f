// The agent creation wizard end to end: the real @anthropic-ai/sdk in the web process talking over HTTP to the
// local Anthropic-compatible server (scripted per test), the real API, Temporal dev server and worker for the
// test run, and the embedded Postgres. Every answer is checked against the OpenAPI document.
import assert from 'node:assert/strict';
import { createHarness, createTestWorkspace, startApi, waitForRun, type Harness } from '../support/harness';
import { checkedFetch } from '../support/openapi-check';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic';
import { brokenAgent, goal, instructions, questions, toolOf, validAgent, wizardModel } from '../support/wizard-model';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- API answers are walked as JSON
type Json = any;

describe('the agent creation wizard', function () {
  this.timeout(180_000);
  let h: Harness;
  let fake: FakeAnthropic;
  let api: { url: string; close(): Promise<void> };
  let workspaceId = '';
  let key: string;

  const call = async (method: string, path: string, body?: unknown, base = api.url) => {
    const res = await checkedFetch(`${base}/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  before(async () => {
    fake = await startFakeAnthropic();
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-sonnet-4-6', unavailableRetries: 0 },
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    workspaceId = t.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  it('takes a goal with a file to a Ready agent: questions, instructions, a validated graph, a successful test run', async () => {
    fake.setHandler(wizardModel([validAgent]));
    // Step 1: the goal and a file for context, which becomes a source the agent lists.
    const form = new FormData();
    form.append('goal', goal);
    form.append('files', new Blob(['Invoices over 1,000 need a second look by finance.']), 'policy.txt');
    const started = await checkedFetch(`${api.url}/v1/wizard/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    assert.equal(started.status, 201);
    const session: Json = await started.json();
    assert.deepEqual(
      session.files.map((f: Json) => f.source),
      ['policy.txt'],
    );
    assert.equal(session.model.available, true);
    const source = await h.stack.knex('sources').where({ workspace_id: workspaceId, name: 'policy.txt' }).first();
    assert.ok(source, 'the uploaded file became a source');

    // Step 2: clarifying questions, generated from the goal (and the file's text).
    const asked = await call('POST', `/wizard/sessions/${session.id}/questions`);
    assert.equal(asked.status, 200);
    assert.deepEqual(
      asked.body.questions.map((q: Json) => q.question),
      questions.map((q) => q.question),
    );
    const first = fake.requests[0].body;
    assert.equal(toolOf(first), 'ask_questions');
    assert.match(JSON.stringify(first.messages), /second look by finance/);

    // Step 3: answers → instructions in six parts, then edited by the person.
    const answered = await call('POST', `/wizard/sessions/${session.id}/answers`, {
      answers: ['Emailed as JSON', 'Over 1,000'],
    });
    assert.equal(answered.status, 200);
    assert.deepEqual(answered.body.instructions, instructions);
    assert.equal(answered.body.questions[1].answer, 'Over 1,000');
    assert.match(JSON.stringify(fake.requests[1].body.messages), /A: Over 1,000/);
    const edited = await call('PUT', `/wizard/sessions/${session.id}/instructions`, {
      instructions: { ...instructions, runtime_parameters: 'Threshold: 1,000 (in euros).' },
    });
    assert.equal(edited.body.instructions.runtime_parameters, 'Threshold: 1,000 (in euros).');

    // Step 5: the graph, asked for with the agent spec's JSON Schema, validated on the first attempt.
    const built = await call('POST', `/wizard/sessions/${session.id}/workflow`, {});
    assert.equal(built.status, 200);
    const workflowRequest = fake.requests[2].body;
    const schema = workflowRequest.tools![0].input_schema as Json;
    assert.ok(schema.properties.nodes && schema.properties.policy, 'the tool schema is the agent spec');
    assert.deepEqual(
      built.body.spec.nodes.map((n: Json) => n.id),
      ['invoices', 'large', 'report'],
    );
    assert.deepEqual(built.body.spec.sources, ['policy.txt']);
    assert.match(built.body.spec.instructions, /## Runtime parameters\n\nThreshold: 1,000 \(in euros\)\./);
    assert.equal(built.body.attempts.length, 1);
    assert.deepEqual(built.body.attempts[0].problems, []);
    assert.equal(built.body.sample_input, validAgent.sample_input);

    // The Draft agent, through the agents API's own creation path: a name another agent has is warned about,
    // not refused.
    const namesake = { name: 'invoice triage', nodes: [{ kind: 'input', id: 'in', next: null }] };
    assert.equal((await call('POST', '/agents', namesake)).status, 201);
    const created = await call('POST', `/wizard/sessions/${session.id}/agent`);
    assert.equal(created.status, 201);
    assert.equal(created.body.state, 'draft');
    assert.deepEqual(created.body.warnings, [
      'another agent is already named “Invoice triage”; rename one so runs, approvals and notifications are not mixed up',
    ]);
    const agentId = created.body.id;
    const notTested = await call('POST', `/agents/${agentId}/state`, { state: 'ready' });
    assert.equal(notTested.status, 409, 'Ready needs a successful test run first');
    const again = await call('POST', `/wizard/sessions/${session.id}/agent`);
    assert.equal(again.status, 409, 'one session creates one agent');

    // The test run on the proposed sample, then Ready.
    const test = await call('POST', `/agents/${agentId}/test-run`, { input: built.body.sample_input });
    assert.equal(test.status, 202);
    const run = await waitForRun(h, test.body.id);
    assert.equal(run.status, 'completed');
    const ready = await call('POST', `/agents/${agentId}/state`, { state: 'ready' });
    assert.equal(ready.status, 200);
    assert.equal(ready.body.state, 'ready');

    // The conversation stays with the agent, with what it cost (Sonnet prices, three calls).
    const history = await call('GET', `/agents/${agentId}/creation-history`);
    assert.equal(history.status, 200);
    assert.equal(history.body.goal, goal);
    assert.deepEqual(
      history.body.conversation.map((m: Json) => `${m.step}:${m.role}`),
      [
        'questions:user',
        'questions:assistant',
        'instructions:user',
        'instructions:assistant',
        'workflow:user',
        'workflow:assistant',
      ],
    );
    assert.equal(history.body.usage.input_tokens, 3000);
    assert.ok(Math.abs(history.body.usage.cost_usd - 3 * ((1000 * 3 + 500 * 15) / 1e6)) < 1e-9);
  });

  it('sends an invalid graph back to the model once with its problems, and keeps the corrected one', async () => {
    fake.setHandler(wizardModel([brokenAgent, validAgent]));
    const session = (await call('POST', '/wizard/sessions', { goal })).body;
    await call('POST', `/wizard/sessions/${session.id}/questions`);
    await call('POST', `/wizard/sessions/${session.id}/answers`, { answers: ['JSON', '1,000'] });
    fake.reset();
    const built = await call('POST', `/wizard/sessions/${session.id}/workflow`, {});
    assert.equal(built.status, 200);
    assert.equal(fake.requests.length, 2);
    const correction = fake.requests[1].body.messages.at(-1)!;
    const result = (correction.content as Json[])[0];
    assert.equal(result.type, 'tool_result');
    assert.equal(result.is_error, true);
    assert.match(result.content, /node "invoices" points to "missing", which does not exist/);
    assert.equal(built.body.attempts.length, 2);
    assert.match(built.body.attempts[0].problems.join(), /points to "missing"/);
    assert.deepEqual(built.body.attempts[1].problems, []);
    assert.equal(built.body.spec.nodes[0].next, 'large');
  });

  it('answers 422 naming the problems when the corrected graph is still invalid, and creates nothing', async () => {
    fake.setHandler(wizardModel([brokenAgent]));
    const session = (await call('POST', '/wizard/sessions', { goal })).body;
    await call('POST', `/wizard/sessions/${session.id}/questions`);
    await call('POST', `/wizard/sessions/${session.id}/answers`, { answers: ['JSON'] });
    fake.reset();
    const built = await call('POST', `/wizard/sessions/${session.id}/workflow`, {});
    assert.equal(built.status, 422);
    assert.equal(built.body.code, 'generated_workflow_invalid');
    assert.match(built.body.detail, /points to "missing"/);
    assert.equal(fake.requests.length, 2, 'one corrective retry, not more');
    const after = (await call('GET', `/wizard/sessions/${session.id}`)).body;
    assert.equal(after.spec, null);
    assert.equal(after.attempts.length, 2);
    const create = await call('POST', `/wizard/sessions/${session.id}/agent`);
    assert.equal(create.status, 409);
    assert.match(create.body.detail, /build the workflow/);
  });

  it('refuses what a person can fix with a message saying how', async () => {
    const empty = await call('POST', '/wizard/sessions', { goal: '  ' });
    assert.equal(empty.status, 422);
    assert.match(empty.body.detail, /describe what the agent should do/);
    const missing = await call('POST', '/wizard/sessions/00000000-0000-4000-8000-000000000000/questions');
    assert.equal(missing.status, 404);
    const session = (await call('POST', '/wizard/sessions', { goal })).body;
    const early = await call('POST', `/wizard/sessions/${session.id}/workflow`, {});
    assert.equal(early.status, 409);
    assert.match(early.body.detail, /answer the questions/);
    const bad = await call('PUT', `/wizard/sessions/${session.id}/instructions`, { instructions: { job: '' } });
    assert.equal(bad.status, 422);
    assert.match(bad.body.detail, /say what the job is/);
  });

  describe('with no model configured', () => {
    let plain: { url: string; close(): Promise<void> };
    before(async () => {
      plain = await startApi({ ...h, config: { ...h.config, model: { ...h.config.model, apiKey: undefined } } });
    });
    after(() => plain?.close());

    it('says why and starts from the examples or a blank agent, which a test run then makes Ready', async () => {
      const requestsBefore = fake.requests.length;
      const starters = await call('GET', '/wizard/starters', undefined, plain.url);
      assert.equal(starters.body.model.available, false);
      assert.match(starters.body.model.reason, /no model configured: set ANTHROPIC_API_KEY/);
      const ids = starters.body.starters.map((s: Json) => s.id);
      assert.ok(ids.includes('blank') && ids.includes('route-csv-rows'), ids.join());
      assert.equal(starters.body.starters.find((s: Json) => s.id === 'extract-invoice-fields').needs_model, true);

      const session = (await call('POST', '/wizard/sessions', { goal: 'Keep a list of orders' }, plain.url)).body;
      assert.equal(session.model.available, false);
      const asked = await call('POST', `/wizard/sessions/${session.id}/questions`, undefined, plain.url);
      assert.equal(asked.status, 409);
      assert.equal(asked.body.code, 'no_model');
      assert.match(asked.body.detail, /set ANTHROPIC_API_KEY.*example or a blank agent/);

      const unknown = await call('POST', `/wizard/sessions/${session.id}/workflow`, { starter: 'nope' }, plain.url);
      assert.equal(unknown.status, 422);
      assert.match(unknown.body.detail, /"blank"/);
      const example = await call(
        'POST',
        `/wizard/sessions/${session.id}/workflow`,
        { starter: 'route-csv-rows' },
        plain.url,
      );
      assert.equal(example.status, 200);
      assert.equal(example.body.spec.nodes[0].id, 'rows');
      const blank = await call('POST', `/wizard/sessions/${session.id}/workflow`, { starter: 'blank' }, plain.url);
      assert.equal(blank.body.spec.name, 'Keep a list of orders');

      const created = await call('POST', `/wizard/sessions/${session.id}/agent`, undefined, plain.url);
      assert.equal(created.status, 201);
      const test = await call(
        'POST',
        `/agents/${created.body.id}/test-run`,
        { input: blank.body.sample_input },
        plain.url,
      );
      assert.equal((await waitForRun(h, test.body.id)).status, 'completed');
      const ready = await call('POST', `/agents/${created.body.id}/state`, { state: 'ready' }, plain.url);
      assert.equal(ready.body.state, 'ready');
      assert.equal(fake.requests.length, requestsBefore, 'no model was called');
    });
  });
});
