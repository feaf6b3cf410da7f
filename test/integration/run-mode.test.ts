// Run Mode links over real HTTP: a token opens one agent's run page and the runs started from it, only while
// the agent's policy allows public access, and nothing else of the workspace.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import { runFileSaver } from '../../db/run-files';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
type Json = any;

describe('Run Mode links', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  before(async () => {
    h = await createHarness();
    api = await startApi(h);
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const call = async (path: string, init: { method?: string; json?: unknown; key?: string } = {}) => {
    const headers: Record<string, string> = {};
    if (init.key) headers.authorization = `Bearer ${init.key}`;
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const res = await checkedFetch(`${api.url}${path}`, {
      method: init.method ?? (init.json !== undefined ? 'POST' : 'GET'),
      headers,
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
    const type = res.headers.get('content-type') ?? '';
    return {
      status: res.status,
      headers: res.headers,
      body: (type.includes('json') ? await res.json() : await res.text()) as Json,
    };
  };

  it('starts runs and shows their results and files to whoever holds the link, and nothing else', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'Public report',
      description: 'Turns rows into a CSV',
      nodes: [
        { kind: 'input', id: 'rows', format: 'csv', next: 'out' },
        { kind: 'output', id: 'out', format: 'csv', file_name: 'report.csv' },
      ],
      policy: { public_access: true },
    });
    const created = await call(`/v1/agents/${agent.id}/run-links`, { key, json: { name: 'For partners' } });
    assert.equal(created.status, 201);
    const token: string = created.body.token;
    assert.equal(created.body.url, `http://cadre.test/r/${token}`);
    assert.equal(created.body.active, true);
    const stored = await h.stack.knex('run_links').where({ id: created.body.id }).first();
    assert.notEqual(stored.token_hash, token, 'only a hash of the token is stored');
    const listed = await call(`/v1/agents/${agent.id}/run-links`, { key });
    assert.equal(listed.body.data[0].token, undefined);

    const page = await call(`/v1/public/run-links/${token}`);
    assert.deepEqual(page.body, {
      agent_name: 'Public report',
      description: 'Turns rows into a CSV',
      input_format: 'csv',
      accepting: true,
    });

    const started = await call(`/v1/public/run-links/${token}/runs`, { json: { input: 'a,b\n1,2\n3,4' } });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    assert.equal(started.body.workspace_id, undefined, 'no workspace details leak');
    const run = await waitForRun(h, started.body.id);
    assert.equal(run.trigger, 'run_link');
    const seen = await call(`/v1/public/run-links/${token}/runs/${run.id}`);
    assert.equal(seen.body.status, 'completed');
    assert.equal(seen.body.files[0].name, 'report.csv');
    const file = await call(`/v1/public/run-links/${token}/runs/${run.id}/files/${seen.body.files[0].id}`);
    assert.equal(file.status, 200);
    assert.equal(file.body, 'a,b\n1,2\n3,4\n');

    // The token is not an API key, and opens no run it did not start.
    assert.equal((await call(`/v1/agents/${agent.id}`, { key: token })).status, 401);
    assert.equal((await call(`/v1/agents/${agent.id}`, { method: 'PUT', key: token, json: {} })).status, 401);
    const other = await call(`/v1/agents/${agent.id}/manual-run`, { key, json: { input: 'a\n1' } });
    assert.equal((await call(`/v1/public/run-links/${token}/runs/${other.body.id}`)).status, 404);
    assert.equal((await call(`/v1/public/run-links/${token}/agents`)).status, 401, 'no other route under the token');

    // Public access turned off → the link opens nothing; revoked → gone.
    await h.stack
      .knex('agent_versions')
      .where({ agent_id: agent.id })
      .update({
        spec: h.stack.knex.raw(`jsonb_set(spec, '{policy,public_access}', 'false')`),
      });
    const closedAgent = await call('/v1/agents', {
      key,
      json: { name: 'Closed', nodes: [{ kind: 'input', id: 'in', next: null }] },
    });
    const closedLink = await call(`/v1/agents/${closedAgent.body.id}/run-links`, { key, json: {} });
    assert.match(closedLink.body.warning, /does not allow public access/);
    const closed = await call(`/v1/public/run-links/${closedLink.body.token}`);
    assert.equal(closed.status, 403);
    assert.equal(closed.body.code, 'public_access_disabled');

    assert.equal((await call(`/v1/run-links/${created.body.id}`, { method: 'DELETE', key })).status, 204);
    assert.equal((await call(`/v1/public/run-links/${token}`)).status, 404);
    assert.equal((await call('/v1/public/run-links/not-a-token')).status, 404);
  });

  it('serves files, to an API key and through a link, as sandboxed attachments that are never sniffed', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'Public pages',
      nodes: [
        { kind: 'input', id: 'rows', format: 'csv', next: 'out' },
        { kind: 'output', id: 'out', format: 'csv', file_name: 'report' },
      ],
      policy: { public_access: true },
    });
    const { token } = (await call(`/v1/agents/${agent.id}/run-links`, { key, json: {} })).body;
    const started = await call(`/v1/public/run-links/${token}/runs`, { json: { input: 'a\n<script>1</script>' } });
    const run = await waitForRun(h, started.body.id);
    // As a mailed attachment or a tool could leave them: active content, with the type a browser would run.
    const save = runFileSaver(h.stack.knex, run.id, `test:${run.id}`);
    await save({
      name: 'x.svg',
      contentType: 'image/svg+xml',
      content: Buffer.from('<svg><script/></svg>'),
      part: '1',
    });
    await save({ name: 'x.html', contentType: 'text/html', content: Buffer.from('<script>x</script>'), part: '2' });
    await save({ name: 'feed.xml', contentType: 'application/xml', content: Buffer.from('<x/>'), part: '3' });
    const seen = await call(`/v1/public/run-links/${token}/runs/${run.id}`);
    assert.equal(seen.headers.get('x-content-type-options'), 'nosniff', 'the public run page’s data too');
    const files = seen.body.files as { id: string; name: string }[];
    assert.deepEqual(files.map((f) => f.name).sort(), ['feed.xml', 'report.csv', 'x.html', 'x.svg']);
    for (const f of files)
      for (const [path, init] of [
        [`/v1/runs/${run.id}/files/${f.id}`, { key }],
        [`/v1/public/run-links/${token}/runs/${run.id}/files/${f.id}`, {}],
      ] as const) {
        const res = await call(path, init);
        assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${f.name} at ${path}`);
        assert.equal(res.headers.get('content-security-policy'), "default-src 'none'; sandbox", `${f.name} at ${path}`);
        assert.match(
          res.headers.get('content-disposition') ?? '',
          new RegExp(`^attachment; filename="?${f.name.replace('.', '\\.')}"?$`),
          `${f.name} at ${path}: ${res.headers.get('content-disposition')}`,
        );
      }
  });
});
