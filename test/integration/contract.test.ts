// The API keeps its own contract, checked with requests generated from /v1/openapi.json itself: for every
// operation, with an API key and with a console session, requests whose path, query and body the document calls
// valid and ones it calls invalid (odd path parameters, wrong types, missing fields). Whatever is sent: no 5xx,
// every answer is one the document lists with a body its schema accepts, and a request the document calls valid
// is not refused as malformed (400/422 invalid_*) — the document's constraints are the server's. Methods a path
// does not have answer 405 with exactly the documented methods in Allow.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { checkResponse, isDeploymentAnswer, semanticBodies, sentLast } from '../support/openapi-check';
import { rng, SchemaSampler, type Json } from '../support/schema-samples';
import { memberWithRole, type Person } from '../support/people';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';

describe('the API keeps its own contract (requests generated from the OpenAPI document)', function () {
  this.timeout(600_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let doc: Json;
  let key: string;
  let person: Person;
  let agentId: string;
  let workspaceId: string;

  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h, { apiRateLimit: 0 });
    doc = await (await fetch(`${api.url}/v1/openapi.json`)).json();
    const t = await createTestWorkspace(h);
    key = t.key;
    workspaceId = t.workspace.id;
    person = await memberWithRole(h.stack.knex, api.url, t.workspace.id, 'admin');
    agentId = (
      await createLiveAgent(h, t.workspace.id, { name: 'contract', nodes: [{ kind: 'input', id: 'in', next: null }] })
    ).id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  /** Values from the document's schemas (test/support/schema-samples.ts), seeded: another seed explores others. */
  let sampler: SchemaSampler;
  const sample = (schema: Json): Json => sampler.valid(schema, 'random');

  interface Case {
    method: string;
    path: string;
    query: string;
    body?: string;
    /** The document calls this request valid. */
    valid: boolean;
  }

  const oddParams = ['%C3%B5', '-1', '99999999999999999999', 'x'.repeat(200), '0'];

  function cases(template: string, method: string, op: Json, random: () => number): Case[] {
    const params: Json[] = op.parameters ?? [];
    const fill = (value: (name: string) => string) =>
      template.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURI(value(name)).replace(/%25/g, '%'));
    // Paths under /agents/{id} name a real agent (it is kept: a DELETE gets another id), others a random id.
    const realPath = fill((name) =>
      name === 'id' && template.startsWith('/agents/') && method !== 'DELETE' ? agentId : randomUUID(),
    );
    // A cursor is opaque (only one this API handed out is valid), so valid requests go without one.
    const validQuery = () =>
      params
        .filter((p) => p.in === 'query' && p.name !== 'cursor' && (p.required || random() < 0.5))
        .map((p) => `${p.name}=${encodeURIComponent(String(sample(p.schema)))}`)
        .join('&');
    const bodySchema = op.requestBody?.content?.['application/json']?.schema;
    const body = () => (bodySchema ? JSON.stringify(sample(bodySchema) ?? {}) : undefined);
    const out: Case[] = [];
    for (let i = 0; i < 3; i++) out.push({ method, path: realPath, query: validQuery(), body: body(), valid: true });
    for (const odd of oddParams)
      out.push({ method, path: fill(() => odd), query: validQuery(), body: body(), valid: false });
    for (const odd of ['-889948116433619072', '', 'nope', '[]', '1e400']) {
      const query = params.filter((p) => p.in === 'query').map((p) => `${p.name}=${encodeURIComponent(odd)}`);
      if (query.length) out.push({ method, path: realPath, query: query.join('&'), body: body(), valid: false });
    }
    if (bodySchema) {
      for (const wrong of ['[]', '"text"', '{}', 'null', '{"unexpected": true}', '{']) {
        out.push({ method, path: realPath, query: '', body: wrong, valid: false });
      }
    }
    return out;
  }

  async function send(c: Case, as: 'key' | 'session') {
    const headers: Record<string, string> = {};
    if (c.body !== undefined) headers['content-type'] = 'application/json';
    if (as === 'key') headers.authorization = `Bearer ${key}`;
    else {
      headers.cookie = [...person.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
      if (person.csrf) headers['x-csrf-token'] = person.csrf;
    }
    const url = `${api.url}/v1${c.path}${c.query ? `?${c.query}` : ''}`;
    const res = await fetch(url, { method: c.method, headers, body: c.body, redirect: 'manual' });
    const type = res.headers.get('content-type') ?? '';
    const text = await res.text();
    let body: Json = text;
    try {
      body = type.includes('json') ? JSON.parse(text) : text;
    } catch {
      // reported below as a mismatch
    }
    return { status: res.status, type, body, url };
  }

  const params = (op: Json): string[] => (op.parameters ?? []).map((p: Json) => p.name);

  it('answers every generated request without a 5xx, as the document says, and accepts what it calls valid', async () => {
    const problems: string[] = [];
    const random = rng(Number(process.env.CONTRACT_SEED ?? 20261124)); // another seed explores other requests
    sampler = new SchemaSampler(doc, random);
    const operations = Object.entries<Json>(doc.paths)
      .flatMap(([template, ops]) => Object.entries<Json>(ops).map(([method, op]) => ({ template, method, op })))
      .sort((a, b) => Number(sentLast.has(a.op.operationId)) - Number(sentLast.has(b.op.operationId)));
    let sent = 0;
    for (const { template, method, op } of operations) {
      if (op.requestBody && !op.requestBody.content?.['application/json']) continue; // uploads: sources.test.ts
      for (const c of cases(template, method.toUpperCase(), op, random)) {
        for (const as of sentLast.has(op.operationId) ? (['key'] as const) : (['key', 'session'] as const)) {
          const r = await send(c, as);
          sent++;
          const where = `${op.operationId} (${as}) ${c.method} ${c.path}${c.query ? `?${c.query}` : ''} ${c.body ?? ''}`;
          if (r.status >= 500 && !isDeploymentAnswer(op.operationId, r.status, r.body))
            problems.push(`${r.status} for ${where}: ${JSON.stringify(r.body).slice(0, 200)}`);
          else {
            try {
              checkResponse(c.method, r.url, r.status, r.type, r.body);
            } catch (err) {
              problems.push(`${where}: ${(err as Error).message.slice(0, 300)}`);
            }
          }
          const bodySchema = op.requestBody?.content?.['application/json']?.schema;
          if (bodySchema && c.body !== undefined && r.status < 300) {
            let parsed: unknown;
            let parses = true;
            try {
              parsed = JSON.parse(c.body);
            } catch {
              parses = false;
            }
            if (!parses || !sampler.accepts(bodySchema, parsed))
              problems.push(`the document refuses the body, the server answered ${r.status}: ${where}`);
          }
          // Refused for its shape: the body, or a parameter (a wrong two-factor code has a code of its own).
          const shape = ['invalid_body', 'invalid_version', 'invalid_date', ...params(op).map((p) => `invalid_${p}`)];
          const malformed = (r.status === 400 || r.status === 422) && shape.includes(r.body?.code);
          // A time zone is an IANA name the runtime knows (a calendar connector's), and a key's expiry is a time
          // still to come: rules JSON Schema cannot say, not a shape either.
          const semantic =
            semanticBodies.has(op.operationId) ||
            /not a time zone|expires_at: must be in the future/.test(r.body?.detail ?? '');
          if (c.valid && malformed && !semantic) {
            problems.push(
              `the document calls it valid, the server ${r.status} ${r.body.code}: ${where}: ${r.body.detail}`,
            );
          }
        }
      }
    }
    assert.deepEqual(problems.slice(0, 60), [], `${problems.length} problems in ${sent} requests`);
    assert.ok(sent > 1500, `${sent} requests sent`);
  });

  it(`answers a method a documented path does not have with 405 and exactly the documented methods in Allow`, async () => {
    const problems: string[] = [];
    for (const [template, ops] of Object.entries<Json>(doc.paths)) {
      const documented = Object.keys(ops).map((m) => m.toUpperCase());
      const path = template.replace(/\{(\w+)\}/g, () => randomUUID());
      const options = await fetch(`${api.url}/v1${path}`, { method: 'OPTIONS' });
      const allow = (h: Headers) => (h.get('allow') ?? '').split(/,\s*/).filter(Boolean).sort();
      if (options.status !== 204 || JSON.stringify(allow(options.headers)) !== JSON.stringify([...documented].sort()))
        problems.push(`OPTIONS ${template}: ${options.status} Allow ${options.headers.get('allow')}`);
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        if (documented.includes(method)) continue;
        const res = await fetch(`${api.url}/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${key}` },
        });
        const problem = (await res.json().catch(() => ({}))) as Json;
        if (res.status !== 405 || JSON.stringify(allow(res.headers)) !== JSON.stringify([...documented].sort()))
          problems.push(`${method} ${template}: ${res.status} Allow ${res.headers.get('allow')}`);
        else if (problem.code !== 'method_not_allowed' || !res.headers.get('content-type')?.includes('problem+json'))
          problems.push(`${method} ${template}: not a method_not_allowed problem`);
      }
    }
    assert.deepEqual(problems, []);
    // An unknown path stays 404.
    assert.equal(
      (await fetch(`${api.url}/v1/no-such-thing`, { headers: { authorization: `Bearer ${key}` } })).status,
      404,
    );
  });

  it('answers the requests that were 500 with a 4xx problem', async () => {
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'versions',
      nodes: [{ kind: 'input', id: 'in', next: null }],
    });
    const asKey = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const cases: [string, string, Record<string, string>, string | undefined, number][] = [
      ['GET', `/agents/${agent.id}/diff?to=-559&from=-889948116433619072`, asKey, undefined, 400],
      ['GET', `/agents/${agent.id}/versions/%C3%B5`, asKey, undefined, 404],
      ['POST', '/auth/logout', asKey, undefined, 401],
      ['PUT', '/me/workspace', asKey, '{"unexpected": [1]}', 401],
    ];
    for (const [method, path, headers, body, status] of cases) {
      const res = await fetch(`${api.url}/v1${path}`, { method, headers, body });
      const problem = (await res.json()) as Json;
      assert.equal(res.status, status, `${method} ${path}: ${JSON.stringify(problem)}`);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      checkResponse(method, `${api.url}/v1${path}`, res.status, res.headers.get('content-type')!, problem);
    }
  });
});
