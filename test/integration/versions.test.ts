// Version history through the API: every save is a version, restoring an old one saves it again as the newest.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { memberWithRole, type Person } from '../support/people';

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
        [1, null],
      ],
      'who saved each version',
    );

    // Without base_version a save is taken as before (scripts that own their agent); a bad one is a 400.
    assert.equal((await call(`/v1/agents/${id}`, 'PUT', spec('scripted'))).status, 200);
    const bad = await call(`/v1/agents/${id}?base_version=two`, 'PUT', spec('x'));
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_base_version');
  });
});
