// The API keeps its own contract, checked with requests generated from /v1/openapi.json itself: for every
// operation, with an API key and with a console session, requests whose path, query and body the document calls
// valid and ones it calls invalid (odd path parameters, wrong types, missing fields). Whatever is sent: no 5xx,
// every answer is one the document lists with a body its schema accepts, and a request the document calls valid
// is not refused as malformed (400/422 invalid_*) — the document's constraints are the server's. Methods a path
// does not have answer 405 with exactly the documented methods in Allow.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import Ajv2020 from 'ajv/dist/2020';
import { checkResponse } from '../support/openapi-check';
import { memberWithRole, type Person } from '../support/people';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked generically
type Json = any;

/** A seeded generator, so a failure names a case that can be sent again. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

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

  /** Whether the document's request schema accepts a JSON body (the reverse check: what it refuses, the server must). */
  const bodyAccepted = (() => {
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
    let added = false;
    return (schema: Json, body: unknown): boolean => {
      if (!added) {
        ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
        added = true;
      }
      return ajv.validate(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')), body);
    };
  })();

  const resolve = (schema: Json): Json =>
    schema?.$ref
      ? resolve(
          schema.$ref
            .split('/')
            .slice(1)
            .reduce((o: Json, k: string) => o[k], doc),
        )
      : schema;

  /** A value the schema accepts. */
  function sample(schema: Json, random: () => number, depth = 0): Json {
    schema = resolve(schema ?? {});
    const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
    if (schema.const !== undefined) return schema.const;
    if (schema.enum) return pick(schema.enum);
    if (schema.default !== undefined && random() < 0.3) return schema.default;
    const branches = schema.oneOf ?? schema.anyOf;
    if (branches) return sample(pick(branches), random, depth + 1);
    if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s: Json) => sample(s, random, depth + 1)));
    const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
    switch (type ?? (schema.properties ? 'object' : undefined)) {
      case 'object': {
        const out: Json = {};
        for (const [name, prop] of Object.entries<Json>(schema.properties ?? {})) {
          if (schema.required?.includes(name) || (depth < 3 && random() < 0.5))
            out[name] = sample(prop, random, depth + 1);
        }
        return out;
      }
      case 'array': {
        const n = Math.max(schema.minItems ?? 0, depth < 3 ? Math.floor(random() * 3) : 0);
        return Array.from({ length: Math.min(n, schema.maxItems ?? n) }, () => sample(schema.items, random, depth + 1));
      }
      case 'integer':
      case 'number': {
        const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
        const max = schema.maximum ?? min + 100;
        return min + Math.floor(random() * (max - min + 1));
      }
      case 'boolean':
        return random() < 0.5;
      case 'string': {
        if (schema.format === 'email') return `p${Math.floor(random() * 1e6)}@example.test`;
        if (schema.format === 'uuid') return randomUUID();
        if (schema.format === 'date-time') return new Date().toISOString();
        if (schema.format === 'uri') return 'https://127.0.0.1/x'; // as for hosts: stays on this machine
        if (schema.format === 'hostname') return '127.0.0.1'; // what is connected to stays on this machine
        if (schema.pattern) {
          // The first of a few plain strings the pattern accepts (times, domains, names, codes).
          const fits = ['sample', '09:30', 'example.com', 'a', 'A', '123456', 'sample_1', '0 9 * * 1'].find((c) =>
            new RegExp(schema.pattern, 'u').test(c),
          );
          if (fits) return fits;
        }
        const text = 'sample value'.padEnd(schema.minLength ?? 0, 'x');
        return schema.maxLength ? text.slice(0, schema.maxLength) : text;
      }
      default:
        return {};
    }
  }

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
        .map((p) => `${p.name}=${encodeURIComponent(String(sample(p.schema, random)))}`)
        .join('&');
    const bodySchema = op.requestBody?.content?.['application/json']?.schema;
    const body = () => (bodySchema ? JSON.stringify(sample(bodySchema, random)) : undefined);
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

  // Operations that end the session or the account the rest of the suite uses are sent last, with the key only.
  const last = new Set(['logout', 'logoutEverywhere', 'deleteMe', 'deleteAccount']);
  // Rules JSON Schema cannot say: an agent spec's graph (exactly one input node, every `next` names a node, no
  // cycles) and a trigger's time zone (an IANA name) and schedule. A body generated from the schema alone may break
  // them, and the server is right to refuse it.
  const semanticBodies = new Set([
    'createAgent',
    'updateAgent',
    'importAgent',
    'createTrigger',
    'updateTrigger',
    'previewSchedule',
  ]);

  it('answers every generated request without a 5xx, as the document says, and accepts what it calls valid', async () => {
    const problems: string[] = [];
    const random = rng(Number(process.env.CONTRACT_SEED ?? 20261124)); // another seed explores other requests
    const operations = Object.entries<Json>(doc.paths)
      .flatMap(([template, ops]) => Object.entries<Json>(ops).map(([method, op]) => ({ template, method, op })))
      .sort((a, b) => Number(last.has(a.op.operationId)) - Number(last.has(b.op.operationId)));
    let sent = 0;
    for (const { template, method, op } of operations) {
      if (op.requestBody && !op.requestBody.content?.['application/json']) continue; // uploads: sources.test.ts
      for (const c of cases(template, method.toUpperCase(), op, random)) {
        for (const as of last.has(op.operationId) ? (['key'] as const) : (['key', 'session'] as const)) {
          const r = await send(c, as);
          sent++;
          const where = `${op.operationId} (${as}) ${c.method} ${c.path}${c.query ? `?${c.query}` : ''} ${c.body ?? ''}`;
          if (r.status >= 500) problems.push(`${r.status} for ${where}: ${JSON.stringify(r.body).slice(0, 200)}`);
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
            if (!parses || !bodyAccepted(bodySchema, parsed))
              problems.push(`the document refuses the body, the server answered ${r.status}: ${where}`);
          }
          const malformed = (r.status === 400 || r.status === 422) && /^invalid_/.test(r.body?.code ?? '');
          if (c.valid && malformed && !semanticBodies.has(op.operationId)) {
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
