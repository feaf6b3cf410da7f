// The OpenAPI 3.1 document: served without a key, well formed, listing every route the API mounts; and the
// response checker the integration tests use really refuses what the document does not allow.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { checkResponse } from '../support/openapi-check';
import { cadreClient } from '../../api/client';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { triggerKinds } from '../../model/trigger';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked generically
type Json = any;

describe('OpenAPI document', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let doc: Json;
  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h);
    const res = await fetch(`${api.url}/v1/openapi.json`);
    assert.equal(res.status, 200, 'served without an API key');
    doc = await res.json();
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  it('is OpenAPI 3.1 with an operationId, a summary and responses on every operation, and no dangling $ref', () => {
    assert.match(doc.openapi, /^3\.1\./);
    assert.equal(doc.servers[0].url, 'http://cadre.test/v1');
    const ids = new Set<string>();
    for (const [p, ops] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(ops)) {
        assert.ok(op.operationId, `${method} ${p} has an operationId`);
        assert.ok(!ids.has(op.operationId), `operationId ${op.operationId} is unique`);
        ids.add(op.operationId);
        assert.ok(op.summary, `${op.operationId} has a summary`);
        assert.ok(
          Object.keys(op.responses).some((s) => s.startsWith('2') || s.startsWith('3')),
          `${op.operationId} documents success (or, for a browser's single sign-on, the redirect)`,
        );
      }
    }
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const r of refs) {
      const target = r.slice(8, -1).replace('#/', '').split('/');
      assert.ok(
        target.reduce((o: Json, k) => o?.[k], doc),
        `${r} resolves`,
      );
    }
  });

  it('is what the typed client is made from: a key creates, reads and lists an agent through it', async () => {
    const { key } = await createTestWorkspace(h);
    const client = cadreClient({ baseUrl: api.url, apiKey: key });
    const created = await client.POST('/agents', {
      body: { name: 'Typed', nodes: [{ kind: 'input', id: 'in', next: null }] },
    });
    assert.equal(created.response.status, 201);
    const id = created.data!.id;
    const read = await client.GET('/agents/{id}', { params: { path: { id } } });
    assert.equal(read.data!.name, 'Typed');
    const listed = await client.GET('/agents', { params: { query: { limit: 10 } } });
    assert.deepEqual(
      listed.data!.data.map((a) => a.id),
      [id],
    );
    const missing = await client.GET('/runs/{id}', {
      params: { path: { id: '00000000-0000-4000-8000-000000000000' } },
    });
    assert.equal(missing.response.status, 404);
    assert.equal((missing.error as { code: string }).code, 'run_not_found');
  });

  it('lists every route the API mounts', () => {
    const dir = path.join(__dirname, '../../api/routes');
    const mounted = fs
      .readdirSync(dir)
      .flatMap((f) =>
        [...fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/\br\.(get|post|put|delete|patch)\(\s*'([^']+)'/g)].map(
          (m) => [m[1], m[2].replace(/:(\w+)/g, '{$1}')] as const,
        ),
      );
    assert.ok(mounted.length > 40);
    for (const [method, route] of mounted) {
      assert.ok(doc.paths[route]?.[method], `${method.toUpperCase()} /v1${route} is in the OpenAPI document`);
    }
  });

  it('takes request bodies from the schemas the routes validate with', () => {
    const create = doc.paths['/agents'].post.requestBody.content['application/json'].schema;
    assert.ok(create.properties.nodes, 'the agent spec');
    const trigger = doc.paths['/agents/{id}/triggers'].post.requestBody.content['application/json'].schema;
    assert.equal(trigger.oneOf?.length ?? trigger.anyOf?.length, triggerKinds.length, 'one schema per trigger kind');
  });

  it('makes the response checker refuse an undocumented status or a body that does not match', () => {
    const url = `${api.url}/v1/runs/00000000-0000-4000-8000-000000000000`;
    assert.throws(() => checkResponse('GET', url, 418, 'application/json', {}), /answered 418/);
    assert.throws(
      () => checkResponse('GET', url, 404, 'application/problem+json', { title: 'Not Found', status: 404 }),
      /does not match.*code/s,
    );
    assert.throws(
      () => checkResponse('POST', `${api.url}/v1/agents/x/run`, 202, 'application/json', { id: 'x', status: 'flying' }),
      /does not match/,
    );
    assert.doesNotThrow(() =>
      checkResponse('GET', url, 404, 'application/problem+json', {
        type: 'https://cadre.dev/problems/run_not_found',
        title: 'Not Found',
        status: 404,
        code: 'run_not_found',
        detail: 'no run',
      }),
    );
  });
});
