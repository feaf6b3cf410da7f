// The OpenAPI 3.1 document: served without a key, well formed, listing every route the API mounts and no other; and the
// response checker the integration tests use really refuses what the document does not allow.
import assert from 'node:assert/strict';
import { checkResponse } from '../support/openapi-check';
import { cadreClient } from '../../api/client';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { triggerKinds } from '../../model/trigger';
import { routes } from '../../api/openapi';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked generically
type Json = any;

/** What the express router package lists of a router: its routes, and the routers mounted in it. */
interface ListsRoutes {
  listRoutes(): { path: string | RegExp; methods?: string[]; router?: ListsRoutes }[];
}

/** Every `METHOD /path` the app answers, found by walking its routers as Express dispatches to them. */
function mountedRoutes(router: ListsRoutes, prefix = ''): string[] {
  return router.listRoutes().flatMap(({ path, methods, router: mountedRouter }) => {
    const at = prefix + (path === '/' ? '' : String(path));
    if (mountedRouter) return mountedRoutes(mountedRouter, at);
    // Express answers HEAD with a GET route; the document lists the GET.
    return (methods ?? []).filter((m) => m !== 'HEAD').map((m) => `${m} ${at}`);
  });
}

describe('OpenAPI document', () => {
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
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

  it('has metadata for every route the app mounts, and a mounted route for every metadata', () => {
    // @types/express does not know listRoutes yet (router 2.3, which Express 5 dispatches with, has it).
    const mounted = mountedRoutes(api.app.router as unknown as ListsRoutes).filter((route) => route.includes(' /v1/'));
    const documented = routes.map((r) => `${r.method.toUpperCase()} /v1${r.path.replace(/\{(\w+)\}/g, ':$1')}`);
    assert.ok(mounted.length > 100);
    assert.deepEqual(
      mounted.filter((route) => !documented.includes(route)),
      ['GET /v1/openapi.json'],
      'every route but the document itself is in the document (its metadata beside its handler in api/routes/)',
    );
    assert.deepEqual(
      documented.filter((route) => !mounted.includes(route)),
      [],
      'every route in the document is mounted',
    );
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
