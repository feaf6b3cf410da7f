// Version history through the API: every save is a version, restoring an old one saves it again as the newest.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';

describe('agent versions', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h);
    key = (await createTestWorkspace(h)).key;
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

  it('refuses a model step that may call a tool the policy sends to a reviewer, saying where to call it', async () => {
    const res = await call('/v1/agents', 'POST', {
      name: 'Mailer',
      nodes: [
        { kind: 'input', id: 'in', next: 'draft' },
        { kind: 'llm', id: 'draft', instructions: 'Write and send the reply.', tools: ['email.send'] },
      ],
      policy: { approvals: { 'email.send': { mode: 'when', when: { field: 'to', op: 'contains', value: '@' } } } },
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'approval_inside_model_step');
    assert.match(res.body.detail, /call "email.send" from a tool node/);
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
});
