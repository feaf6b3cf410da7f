// Skills through the API and into model steps: uploaded skills are versioned by name, attached to agents by name
// (pinned or newest), put in the llm step's system prompt under their names next to the platform skills of the
// tools the step is offered, listed in run details with their versions, and a run keeps the versions it started
// with. The real @anthropic-ai/sdk talks to the local Anthropic-compatible server (test/fakes/anthropic.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { checkedFetch } from '../support/openapi-check';
import { createHarness, createTestWorkspace, startApi, waitForRun, type Harness } from '../support/harness';
import { reply, startFakeAnthropic, text, type FakeAnthropic, type MessagesRequest } from '../fakes/anthropic';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The system prompt as one string, and the step it was for. */
const systemText = (body: MessagesRequest) =>
  typeof body.system === 'string' ? body.system : (body.system ?? []).map((b) => b.text).join('\n\n');
const stepOf = (body: MessagesRequest) => /Step "([^"]+)"/.exec(systemText(body))?.[1];

describe('skills', function () {
  this.timeout(120_000);
  let fake: FakeAnthropic;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let key: string;

  before(async () => {
    fake = await startFakeAnthropic();
    h = await createHarness({
      config: {
        model: { apiKey: 'test-key', baseUrl: fake.url, name: 'claude-sonnet-4-6', unavailableRetries: 0 },
      } as never,
    });
    api = await startApi(h);
    key = (await createTestWorkspace(h)).key;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => {
    fake.reset();
    fake.setHandler(() => reply([text('Done.')]));
  });

  const call = async (method: string, url: string, json?: unknown) => {
    const res = await checkedFetch(`${api.url}/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      body: (res.status === 204 ? {} : await res.json()) as Json,
    };
  };
  const upload = async (name: string, content: string, description?: string) => {
    const res = await call('POST', '/skills', { name, content, ...(description ? { description } : {}) });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const unique = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

  const agentSpec = (skills: string[], nodes: Json[] = [{ kind: 'llm', id: 'answer', instructions: 'Answer.' }]) => ({
    name: unique('skilled agent'),
    instructions: 'You answer customer messages.',
    skills,
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: nodes[0].id },
      ...nodes.map((n, i) => ({ ...n, next: nodes[i + 1]?.id ?? null })),
    ],
    policy: { concurrency: 1 },
  });
  const createAgent = async (spec: Json) => {
    const res = await call('POST', '/agents', spec);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const testRun = async (agentId: string, input: unknown[]) => {
    const res = await call('POST', `/agents/${agentId}/test-run`, { input: JSON.stringify(input) });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return waitForRun(h, res.body.id);
  };

  it('adds a version when a skill is uploaded again under its name, and answers each version', async () => {
    const name = unique('refund-policy');
    const first = await upload(name, '# Refunds\nRefund within 30 days.', 'How refunds work');
    assert.equal(first.latest_version.version, 1);
    assert.equal(first.description, 'How refunds work');
    const second = await upload(name, '# Refunds\nRefund within 14 days.');
    assert.equal(second.id, first.id);
    assert.equal(second.latest_version.version, 2);
    assert.deepEqual(
      second.versions.map((v: Json) => v.version),
      [2, 1],
    );

    const listed = await call('GET', '/skills');
    const mine = listed.body.data.find((s: Json) => s.name === name);
    assert.equal(mine.latest_version.version, 2);
    assert.ok(listed.body.platform.some((p: Json) => p.name === 'SQL databases' && p.tools.includes('sql.query')));

    const v1 = await call('GET', `/skills/${first.id}/versions/1`);
    assert.equal(v1.body.content, '# Refunds\nRefund within 30 days.');
    assert.equal(
      (await call('GET', `/skills/${first.id}/versions/2`)).body.content,
      '# Refunds\nRefund within 14 days.',
    );
    const none = await call('GET', `/skills/${first.id}/versions/3`);
    assert.equal(none.status, 404);
    assert.match(none.body.detail, /has no version 3/);
  });

  it('refuses an empty, binary or too large skill with a problem saying why, and stores nothing', async () => {
    const name = unique('too-much');
    const big = await call('POST', '/skills', { name, content: 'x'.repeat(100_001) });
    assert.equal(big.status, 413);
    assert.match(big.type, /application\/problem\+json/);
    assert.equal(big.body.code, 'skill_too_large');
    assert.match(big.body.detail, /100001 bytes; a skill holds at most 100000 bytes/);

    const empty = await call('POST', '/skills', { name, content: '  \n ' });
    assert.equal(empty.status, 422);
    assert.equal(empty.body.code, 'invalid_body');
    assert.deepEqual(
      empty.body.errors.map((e: Json) => e.path),
      ['content'],
    );
    assert.match(empty.body.detail, /a skill cannot be empty/);
    const binary = await call('POST', '/skills', { name, content: 'PK\u0003\u0004\u0000\u0000' });
    assert.equal(binary.status, 422);
    assert.match(binary.body.detail, /NUL bytes/);
    const badName = await call('POST', '/skills', { name: 'quote"d', content: 'text' });
    assert.equal(badName.status, 422);

    assert.ok(!(await call('GET', '/skills')).body.data.some((s: Json) => s.name === name));
    assert.equal(Number((await h.stack.knex('skills').where({ name }).count('* as n'))[0].n), 0);

    // A version refused on an existing skill leaves it as it was.
    const kept = await upload(unique('kept'), 'Be brief.');
    assert.equal((await call('POST', '/skills', { name: kept.name, content: 'é'.repeat(50_001) })).status, 413);
    const after = await call('GET', `/skills/${kept.id}`);
    assert.equal(after.body.latest_version.version, 1);
    assert.equal(after.body.versions.length, 1);
  });

  it("puts the agent's skill in each llm request's system prompt under its name, and run details list it with its version", async () => {
    const name = unique('tone');
    await upload(name, 'Sign every answer as "Cadre Bot v1".');
    await upload(name, 'Sign every answer as "Cadre Bot v2".');
    const agent = await createAgent(agentSpec([name]));
    assert.deepEqual(agent.warnings, []);

    const run = await testRun(agent.id, [{ text: 'hello' }, { text: 'bonjour' }]);
    assert.equal(run.status, 'completed');
    assert.equal(fake.requests.length, 2);
    for (const { body } of fake.requests) {
      const system = systemText(body);
      assert.ok(system.includes(`<skill name="${name}" version="2">\nSign every answer as "Cadre Bot v2".\n</skill>`));
      assert.ok(!system.includes('Cadre Bot v1'));
      assert.ok(!system.includes('kind="platform"'), 'a step with no tools gets no platform skill');
      // The skills sit inside the cached prefix: the last system block carries the cache breakpoint.
      assert.ok(Array.isArray(body.system));
      assert.deepEqual(body.system.at(-1)?.cache_control, { type: 'ephemeral' });
    }
    assert.equal(systemText(fake.requests[0].body), systemText(fake.requests[1].body));

    const context = await call('GET', `/runs/${run.id}/skill-context`);
    assert.equal(context.status, 200);
    assert.deepEqual(
      context.body.data.map((r: Json) => [r.item_seq, r.node_id, r.skills]),
      [0, 1].map((seq) => [seq, 'answer', [{ name, kind: 'user', version: 2 }]]),
    );
    assert.deepEqual(context.body.skills, [{ name, kind: 'user', version: 2, steps: 2 }]);
    const one = await call('GET', `/runs/${run.id}/skill-context?item=1`);
    assert.deepEqual(
      one.body.data.map((r: Json) => r.item_seq),
      [1],
    );

    // An agent pinning version 1 gets version 1, though version 2 is newer.
    fake.reset();
    const pinned = await createAgent(agentSpec([`${name}@1`]));
    const pinnedRun = await testRun(pinned.id, [{ text: 'hi' }]);
    assert.equal(pinnedRun.status, 'completed');
    assert.ok(systemText(fake.requests[0].body).includes(`<skill name="${name}" version="1">`));
    assert.ok(systemText(fake.requests[0].body).includes('Cadre Bot v1'));
    assert.deepEqual((await call('GET', `/runs/${pinnedRun.id}/skill-context`)).body.skills, [
      { name, kind: 'user', version: 1, steps: 1 },
    ]);
  });

  it('loads a platform skill only into the steps offered its tools', async () => {
    const agent = await createAgent({
      ...agentSpec(
        [],
        [
          { kind: 'llm', id: 'lookup', instructions: 'Look the customer up.', tools: ['sql.query'] },
          { kind: 'llm', id: 'notify', instructions: 'Tell the CRM.', tools: ['http.request'] },
          { kind: 'llm', id: 'reply', instructions: 'Write the reply.' },
        ],
      ),
      connections: ['shop'],
    });
    const run = await testRun(agent.id, [{ text: 'where is my order?' }]);
    assert.equal(run.status, 'completed');
    const byStep = new Map(fake.requests.map((r) => [stepOf(r.body), systemText(r.body)]));
    assert.deepEqual([...byStep.keys()].sort(), ['lookup', 'notify', 'reply']);
    assert.match(byStep.get('lookup')!, /<skill name="SQL databases" kind="platform">/);
    assert.match(byStep.get('lookup')!, /bind|placeholders/);
    assert.doesNotMatch(byStep.get('lookup')!, /HTTP APIs/);
    assert.match(byStep.get('notify')!, /<skill name="HTTP APIs" kind="platform">/);
    assert.doesNotMatch(byStep.get('notify')!, /SQL databases/);
    assert.doesNotMatch(byStep.get('reply')!, /<skill /);

    const context = await call('GET', `/runs/${run.id}/skill-context`);
    assert.deepEqual(
      context.body.data.map((r: Json) => [r.node_id, r.skills]).sort(),
      [
        ['lookup', [{ name: 'SQL databases', kind: 'platform', version: null }]],
        ['notify', [{ name: 'HTTP APIs', kind: 'platform', version: null }]],
      ].sort(),
    );
  });

  it('keeps the version a run started with when a new one is uploaded mid-run; the next run uses the new one', async () => {
    const name = unique('pricing');
    await upload(name, 'Prices are in euros (v1).');
    const agent = await createAgent(agentSpec([name]));
    let uploaded = false;
    fake.setHandler(async (_body, index) => {
      // While the first item's step waits on the model, a person uploads version 2.
      if (index === 0) {
        await upload(name, 'Prices are in dollars (v2).');
        uploaded = true;
      }
      return reply([text('Done.')]);
    });
    const run = await testRun(agent.id, [{ text: 'a' }, { text: 'b' }, { text: 'c' }]);
    assert.equal(run.status, 'completed');
    assert.ok(uploaded);
    assert.equal(fake.requests.length, 3);
    assert.equal(fake.maxInFlight, 1, 'the later items asked the model after the upload');
    for (const { body } of fake.requests) {
      assert.ok(systemText(body).includes('Prices are in euros (v1).'));
      assert.ok(!systemText(body).includes('(v2)'));
    }
    assert.deepEqual((await call('GET', `/runs/${run.id}/skill-context`)).body.skills, [
      { name, kind: 'user', version: 1, steps: 3 },
    ]);

    fake.reset();
    fake.setHandler(() => reply([text('Done.')]));
    const next = await testRun(agent.id, [{ text: 'd' }]);
    assert.ok(systemText(fake.requests[0].body).includes('Prices are in dollars (v2).'));
    assert.deepEqual((await call('GET', `/runs/${next.id}/skill-context`)).body.skills, [
      { name, kind: 'user', version: 2, steps: 1 },
    ]);
  });

  it('refuses an agent that lists a skill twice or names one in a form that is not "name" or "name@<version>"', async () => {
    const twice = await call('POST', '/agents', agentSpec(['tone', 'tone@2']));
    assert.equal(twice.status, 422);
    assert.deepEqual(twice.body.errors, [{ path: 'skills.1', message: 'skill "tone" is listed twice' }]);
    const malformed = await call('POST', '/agents', agentSpec(['tone@latest']));
    assert.equal(malformed.status, 422);
    assert.equal(malformed.body.errors[0].path, 'skills.0');
    assert.match(malformed.body.errors[0].message, /"name@<version>"/);
  });

  it('warns when an agent names a skill the workspace lacks, keeps it from going ready, and fails its model steps saying which', async () => {
    const name = unique('escalation');
    const agent = await createAgent(agentSpec([name]));
    assert.deepEqual(agent.warnings, [
      `there is no skill "${name}" in this workspace yet; upload it before the agent goes live, or its model steps fail`,
    ]);
    const run = await testRun(agent.id, [{ text: 'help' }]);
    assert.equal(fake.requests.length, 0, 'the model is not asked without the skill');
    const items = await call('GET', `/runs/${run.id}/items`);
    assert.equal(items.body.data[0].status, 'failed');
    assert.match(items.body.data[0].error, new RegExp(`there is no skill "${name}" in this workspace: upload it`));

    // Uploaded, a test run passes; archived again, the agent cannot go ready.
    const skill = await upload(name, 'Escalate refunds over 500 EUR.');
    assert.equal((await testRun(agent.id, [{ text: 'help' }])).status, 'completed');
    assert.equal((await call('DELETE', `/skills/${skill.id}`)).status, 204);
    assert.ok(!(await call('GET', '/skills')).body.data.some((s: Json) => s.id === skill.id));
    const ready = await call('POST', `/agents/${agent.id}/state`, { state: 'ready' });
    assert.equal(ready.status, 409);
    assert.match(ready.body.detail, new RegExp(`there is no skill "${name}" in this workspace: upload it`));
    // Its versions stay readable for the runs that used them.
    assert.equal((await call('GET', `/skills/${skill.id}/versions/1`)).status, 200);
  });
});
