// Version history through the API: every save is a version, restoring an old one saves it again as the newest.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { memberWithRole, type Person } from '../support/people';
import { AgentGoneError, updateAgent, type AgentRow } from '../../db/agents';
import { agentSpecSchema } from '../../model/agent';

describe('agent versions', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let ann: Person;
  let bob: Person;
  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    // Two editors of the workspace, each signed in to the console.
    ann = await memberWithRole(h.stack.knex, api.url, t.workspace.id, 'editor');
    bob = await memberWithRole(h.stack.knex, api.url, t.workspace.id, 'editor');
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const call = async (path: string, method = 'GET', body?: unknown) => {
    const res = await checkedFetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
    return { status: res.status, body: (await res.json()) as any };
  };
  const spec = (instructions: string) => ({
    name: 'Versioned',
    instructions,
    nodes: [{ kind: 'input', id: 'in', next: null }],
  });

  it('lists the built-in tools with what they touch, their default approval and their input schema', async () => {
    const tools = (await call('/v1/tools')).body.data;
    const http = tools.find((t: { name: string }) => t.name === 'http.request');
    assert.equal(http.side_effect, 'external');
    assert.equal(http.approval_default, 'never');
    assert.deepEqual(http.input_schema.required, ['url']);
    assert.ok(tools.some((t: { name: string }) => t.name === 'state.increment'));
  });

  it('saves a model step that may call a tool the policy sends to a reviewer (the call waits for approval at run time)', async () => {
    const res = await call('/v1/agents', 'POST', {
      name: 'Mailer',
      nodes: [
        { kind: 'input', id: 'in', next: 'draft' },
        { kind: 'llm', id: 'draft', instructions: 'Write and send the reply.', tools: ['email.send'] },
      ],
      policy: { approvals: { 'email.send': { mode: 'when', when: { field: 'to', op: 'contains', value: '@' } } } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.spec.policy.approvals['email.send'].mode, 'when');
  });

  it('restores an old version as the newest, keeps the history and records it in the timeline', async () => {
    const created = await call('/v1/agents', 'POST', spec('first'));
    const id = created.body.id;
    await call(`/v1/agents/${id}`, 'PUT', spec('second'));
    await call(`/v1/agents/${id}`, 'PUT', spec('third'));

    const restored = await call(`/v1/agents/${id}/versions/1/restore`, 'POST');
    assert.equal(restored.status, 200);
    assert.equal(restored.body.current_version, 4);
    assert.equal((await call(`/v1/agents/${id}`)).body.spec.instructions, 'first');
    const versions = (await call(`/v1/agents/${id}/versions`)).body.data.map((v: { version: number }) => v.version);
    assert.deepEqual(versions, [4, 3, 2, 1]);
    const diff = await call(`/v1/agents/${id}/diff?from=3&to=4`);
    assert.deepEqual(diff.body.changes, [{ path: 'instructions', from: 'third', to: 'first' }]);
    const events = (await call(`/v1/agents/${id}/timeline`)).body.data;
    assert.match(events[0].message, /^version 1 restored as version 4/);

    const missing = await call(`/v1/agents/${id}/versions/9/restore`, 'POST');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'version_not_found');
  });

  it('of two people saving edits of the same version at once, takes one and tells the other who saved which version', async () => {
    const id = (await call('/v1/agents', 'POST', spec('first'))).body.id;
    const [annSave, bobSave] = await Promise.all([
      ann.call(`/agents/${id}?base_version=1`, { method: 'PUT', json: spec("Ann's change") }),
      bob.call(`/agents/${id}?base_version=1`, { method: 'PUT', json: spec("Bob's change") }),
    ]);
    const saves = [annSave, bobSave];
    assert.deepEqual(saves.map((s) => s.status).sort(), [200, 409], JSON.stringify(saves.map((s) => s.body)));
    const [won, lost] = annSave.status === 200 ? [ann, bob] : [bob, ann];
    const refusal = saves.find((s) => s.status === 409)!;
    assert.match(refusal.headers.get('content-type')!, /application\/problem\+json/);
    assert.equal(refusal.body.code, 'version_conflict');
    assert.equal(
      refusal.body.detail,
      `version 2 was saved by ${won.email} after you opened version 1: reload to see it, then make your change again`,
    );
    assert.equal(refusal.body.current_version, 2);

    // Nothing of the refused save was kept; the winner's is version 2, and the loser saves on it once reloaded.
    const agent = (await call(`/v1/agents/${id}`)).body;
    assert.equal(agent.current_version, 2);
    assert.equal(agent.spec.instructions, won === ann ? "Ann's change" : "Bob's change");
    assert.deepEqual((await call(`/v1/agents/${id}/versions`)).body.data.length, 2);
    const again = await lost.call(`/agents/${id}?base_version=2`, { method: 'PUT', json: spec('both changes') });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.current_version, 3);
    const history = (await call(`/v1/agents/${id}/versions`)).body.data;
    assert.deepEqual(
      history.map((v: { version: number; saved_by: string | null }) => [v.version, v.saved_by]),
      [
        [3, lost.email],
        [2, won.email],
        [1, 'API key "test key"'],
      ],
      'who saved each version',
    );

    // Without base_version a save is taken as before (scripts that own their agent); a bad one is a 400.
    assert.equal((await call(`/v1/agents/${id}`, 'PUT', spec('scripted'))).status, 200);
    const bad = await call(`/v1/agents/${id}?base_version=two`, 'PUT', spec('x'));
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_base_version');
  });

  it('records who created an agent as the author of version 1, however it was created', async () => {
    const authorOfFirst = async (id: string) => {
      const versions = (await call(`/v1/agents/${id}/versions`)).body.data;
      return versions.find((v: { version: number }) => v.version === 1).saved_by;
    };
    const byKey = (await call('/v1/agents', 'POST', spec('by a script'))).body;
    assert.equal(await authorOfFirst(byKey.id), 'API key "test key"');

    const created = await ann.call('/agents', { json: spec("Ann's") });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(await authorOfFirst(created.body.id), ann.email);
    const exported = (await ann.call(`/agents/${created.body.id}/export`)).body;
    const imported = await bob.call('/agents/import', { json: exported });
    assert.equal(imported.status, 201, JSON.stringify(imported.body));
    assert.equal(await authorOfFirst(imported.body.id), bob.email);
    const copy = await bob.call(`/agents/${created.body.id}/duplicate`, { method: 'POST' });
    assert.equal(copy.status, 201, JSON.stringify(copy.body));
    assert.equal(await authorOfFirst(copy.body.id), bob.email);

    // The creation wizard, from a starter (no model needed).
    const session = (await ann.call('/wizard/sessions', { json: { goal: 'Route the rows of a sheet' } })).body;
    assert.equal(
      (await ann.call(`/wizard/sessions/${session.id}/workflow`, { json: { starter: 'route-csv-rows' } })).status,
      200,
    );
    const wizardMade = await ann.call(`/wizard/sessions/${session.id}/agent`, { method: 'POST' });
    assert.equal(wizardMade.status, 201, JSON.stringify(wizardMade.body));
    assert.equal(await authorOfFirst(wizardMade.body.id), ann.email);
    const timeline = (await call(`/v1/agents/${wizardMade.body.id}/timeline`)).body.data;
    assert.equal(timeline.at(-1).message, `agent created (version 1) by ${ann.email} with the creation wizard`);
  });

  it('refuses every base_version that is not exactly a version number with a 400 problem, saving nothing', async () => {
    const id = (await call('/v1/agents', 'POST', spec('first'))).body.id;
    const hostile = [
      '-1',
      '0',
      '-0',
      '1.5',
      '1.0',
      '1e3',
      '+1',
      '0x1',
      ' 1',
      '1 ',
      '',
      'NaN',
      'Infinity',
      '9223372036854775808', // 2^63
      '99999999999999999999',
      '1000000000', // one past the largest the document allows
      '\u0661', // ARABIC-INDIC DIGIT ONE
      '\uff11', // FULLWIDTH DIGIT ONE
      "1' or '1'='1",
    ];
    const queries = [
      ...hostile.map((v) => `base_version=${encodeURIComponent(v)}`),
      'base_version=1&base_version=2',
      'base_version=1&base_version=1',
    ];
    for (const query of queries)
      for (const [method, path, body] of [
        ['PUT', `/v1/agents/${id}`, spec('hostile')],
        ['POST', `/v1/agents/${id}/versions/1/restore`, undefined],
      ] as const) {
        const res = await checkedFetch(`${api.url}${path}?${query}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        const problem = (await res.json()) as { code: string; detail: string };
        assert.equal(res.status, 400, `${method} ?${query}: ${JSON.stringify(problem)}`);
        assert.match(res.headers.get('content-type')!, /^application\/problem\+json/);
        assert.equal(problem.code, 'invalid_base_version', query);
        assert.match(
          problem.detail,
          query.includes('&')
            ? /^base_version is given more than once: give it once$/
            : /^base_version must be a version number: a whole number from 1 to 999999999$/,
          query,
        );
      }
    const agent = (await call(`/v1/agents/${id}`)).body;
    assert.equal(agent.current_version, 1, 'nothing was saved');
    assert.equal(agent.spec.instructions, 'first');

    // Exactly a version number is taken, written in plain digits (leading zeros are still that number).
    assert.equal((await call(`/v1/agents/${id}?base_version=1`, 'PUT', spec('second'))).status, 200);
    assert.equal((await call(`/v1/agents/${id}?base_version=002`, 'PUT', spec('third'))).status, 200);
    // A number in range the agent has not reached is a conflict like a stale one: the editor reloads.
    const ahead = await call(`/v1/agents/${id}?base_version=999999999`, 'PUT', spec('x'));
    assert.equal(ahead.status, 409);
    assert.equal(ahead.body.code, 'version_conflict');
    assert.equal(
      ahead.body.detail,
      'the agent has no version 999999999: its newest is version 3 by API key "test key"; reload to see it, then make your change again',
    );
    assert.equal((await call(`/v1/agents/${id}`)).body.current_version, 3);
  });

  it('restores a version only on the version the person saw, when it is given', async () => {
    const id = (await ann.call('/agents', { json: spec('first') })).body.id;
    assert.equal((await bob.call(`/agents/${id}?base_version=1`, { method: 'PUT', json: spec('second') })).status, 200);
    // Ann, still looking at version 1, restores it: Bob's version 2 came in between.
    const stale = await ann.call(`/agents/${id}/versions/1/restore?base_version=1`, { method: 'POST' });
    assert.equal(stale.status, 409);
    assert.match(stale.headers.get('content-type')!, /^application\/problem\+json/);
    assert.equal(stale.body.code, 'version_conflict');
    assert.equal(
      stale.body.detail,
      `version 2 was saved by ${bob.email} after you opened version 1: reload to see it, then make your change again`,
    );
    assert.equal((await call(`/v1/agents/${id}`)).body.current_version, 2, 'nothing restored');
    const restored = await ann.call(`/agents/${id}/versions/1/restore?base_version=2`, { method: 'POST' });
    assert.equal(restored.status, 200, JSON.stringify(restored.body));
    assert.equal(restored.body.current_version, 3);
    assert.equal(restored.body.spec.instructions, 'first');
    const history = (await call(`/v1/agents/${id}/versions`)).body.data;
    assert.deepEqual(
      history.map((v: { version: number; saved_by: string | null }) => [v.version, v.saved_by]),
      [
        [3, ann.email],
        [2, bob.email],
        [1, ann.email],
      ],
    );
  });

  it('answers a save to a deleted agent 404 agent_not_found, with or without base_version', async () => {
    const id = (await ann.call('/agents', { json: spec('first') })).body.id;
    assert.equal((await ann.call(`/agents/${id}`, { method: 'DELETE' })).status, 204);
    for (const query of ['?base_version=1', '']) {
      const save = await bob.call(`/agents/${id}${query}`, { method: 'PUT', json: spec('too late') });
      assert.equal(save.status, 404, JSON.stringify(save.body));
      assert.match(save.headers.get('content-type')!, /^application\/problem\+json/);
      assert.equal(save.body.code, 'agent_not_found');
      assert.equal(save.body.detail, `no agent ${id} in this workspace`);
      const restore = await bob.call(`/agents/${id}/versions/1/restore${query}`, { method: 'POST' });
      assert.equal(restore.status, 404);
      assert.equal(restore.body.code, 'agent_not_found');
    }
  });

  it('saves nothing for an agent deleted after the save read it (the save meets no agent)', async () => {
    // The save's own statement, past the read that found the agent: what a delete landing in between leaves it.
    const id = (await call('/v1/agents', 'POST', spec('first'))).body.id;
    const read: AgentRow = await h.stack.knex('agents').where({ id }).first();
    await h.stack.knex('agents').where({ id }).delete();
    for (const baseVersion of [1, undefined])
      await assert.rejects(
        updateAgent(h.stack.knex, read, agentSpecSchema.parse(spec('too late')), {
          baseVersion,
          savedBy: ann.email,
          event: () => ({ message: 'saved' }),
        }),
        AgentGoneError,
      );
    assert.equal((await h.stack.knex('agent_versions').where({ agent_id: id })).length, 0);
    assert.equal((await h.stack.knex('agent_events').where({ agent_id: id })).length, 0);
  });

  it('of a delete and a guarded save at once, ends in one clean outcome: never a 500, nothing half written', async () => {
    for (let round = 0; round < 12; round++) {
      const id = (await ann.call('/agents', { json: spec('first') })).body.id;
      const save$ = () => ann.call(`/agents/${id}?base_version=1`, { method: 'PUT', json: spec('racing') });
      const del$ = () => bob.call(`/agents/${id}`, { method: 'DELETE' });
      // Sent in turn one first, then the other.
      const [save, del] =
        round % 2 ? await Promise.all([save$(), del$()]) : (await Promise.all([del$(), save$()])).reverse();
      assert.equal(del.status, 204, JSON.stringify(del.body));
      // Either the save landed first (then the delete removed it with the agent) or the agent was gone.
      assert.ok([200, 404].includes(save.status), `${save.status} ${JSON.stringify(save.body)}`);
      if (save.status === 404) assert.equal(save.body.code, 'agent_not_found');
      else assert.equal(save.body.current_version, 2);
      for (const table of ['agents', 'agent_versions', 'agent_events'] as const) {
        const rows = await h.stack.knex(table).where(table === 'agents' ? { id } : { agent_id: id });
        assert.deepEqual(rows, [], `${table} keeps nothing of the deleted agent`);
      }
      assert.equal((await call(`/v1/agents/${id}`)).status, 404);
    }
  });
});
