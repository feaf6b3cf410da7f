// Requests generated from the OpenAPI document, for every operation in it, the way a property-based API tester
// (Schemathesis) makes them: values the document calls valid (smallest, largest, awkward, random) and ones it calls
// invalid (one rule broken), and hostile ones — a cookie that does not decode, U+0000 in every string, JSON nested
// 5,000 deep, huge numbers, wrong types, over-long text, required fields left out, forged page cursors. Each is sent
// with an admin's API key and with an admin's console session, to real objects of the workspace where the path
// names one (so bodies are read, not refused for the id). Whatever is sent: no 5xx, every 4xx is
// application/problem+json, and the document and the validation agree — a request it calls valid is not refused
// for its shape (400/422 invalid_*), one it calls invalid is not accepted. Seeded (FUZZ_SEED) and bounded in count.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { checkResponse, isDeploymentAnswer, semanticBodies, sentLast } from '../support/openapi-check';
import { memberWithRole, type Person } from '../support/people';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  startTestRun,
  type Harness,
} from '../support/harness';
import { createConversation } from '../../db/chat';
import { createConnection } from '../../db/connections';
import { loadSecretBox } from '../../db/secret-box';
import { deepJson, mapNumbers, mapStrings, rng, SchemaSampler, type Json, type Mode } from '../support/schema-samples';

type As = 'key' | 'session';

interface Case {
  /** What strategy made it, for the report. */
  strategy: string;
  method: string;
  path: string;
  query?: string;
  /** JSON text, or a multipart form. */
  body?: string | FormData;
  /** The document calls it valid (true), invalid (false), or it is hostile with no such claim (undefined). */
  valid?: boolean;
  /** Send a cookie that does not decode instead of the session. */
  badCookie?: boolean;
}

describe('generated requests over the whole OpenAPI document (api-fuzz)', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let doc: Json;
  let key: string;
  let person: Person;
  let workspaceId: string;
  /** Real objects of the workspace, by the first segment of the path that names one. */
  const ids: Record<string, string> = {};
  /** Conversations are their owner's: one for the key, one for the person. */
  const conversations: Record<As, string> = { key: '', session: '' };

  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h, { apiRateLimit: 0 });
    doc = await (await fetch(`${api.url}/v1/openapi.json`)).json();
    const t = await createTestWorkspace(h);
    key = t.key;
    workspaceId = t.workspace.id;
    person = await memberWithRole(h.stack.knex, api.url, workspaceId, 'admin');
    const viewer = await memberWithRole(h.stack.knex, api.url, workspaceId, 'viewer');
    const asKey = async (path: string, json: unknown) => {
      const res = await fetch(`${api.url}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
      const body = (await res.json()) as Json;
      assert.ok(res.ok, `${path}: ${res.status} ${JSON.stringify(body)}`);
      return body;
    };
    const agent = await createLiveAgent(h, workspaceId, {
      name: 'fuzzed',
      nodes: [{ kind: 'input', id: 'in', next: null }],
      policy: { public_access: true },
    });
    const run = await startTestRun(h, workspaceId, agent.id, 'x');
    await h.stack.knex('run_items').insert({ run_id: run.id, seq: 0, status: 'needs_review', data: '{}' });
    const approval = randomUUID();
    await h.stack.knex('approvals').insert({
      id: approval,
      workspace_id: workspaceId,
      run_id: run.id,
      item_seq: 0,
      node_id: 'in',
      workflow_id: 'w',
      tool: 'state.set',
      arguments: '{}',
    });
    const review = randomUUID();
    await h.stack.knex('item_reviews').insert({
      id: review,
      workspace_id: workspaceId,
      run_id: run.id,
      item_seq: 0,
      node_id: 'in',
      workflow_id: 'w',
      reason: 'fuzzed',
    });
    const webhook = await asKey(`/agents/${agent.id}/triggers`, { kind: 'webhook' });
    const form = await asKey(`/agents/${agent.id}/triggers`, {
      kind: 'form',
      title: 'Fuzzed',
      fields: [{ name: 'text', label: 'Text' }],
    });
    const link = await asKey(`/agents/${agent.id}/run-links`, { name: 'fuzzed link' });
    const invitation = await asKey('/invitations', { role: 'viewer' });
    const skill = await asKey('/skills', { name: 'fuzzed', content: 'Be brief.' });
    const upload = new FormData();
    upload.append('files', new Blob(['Some text to find.'], { type: 'text/plain' }), 'notes.txt');
    const sources = await fetch(`${api.url}/v1/sources`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: upload,
    });
    assert.equal(sources.status, 202);
    const connection = await createConnection(h.stack.knex, {
      workspace_id: workspaceId,
      name: 'fuzzed_db',
      kind: 'postgres',
      config: {
        host: '127.0.0.1',
        port: 5432,
        database: 'x',
        user: 'x',
        ssl: false,
        allow_writes: false,
        row_limit: 1000,
        statement_timeout_ms: 10_000,
      },
      credentials_sealed: loadSecretBox(h.config).seal(JSON.stringify({ password: '' })),
      created_by: 'test',
    });
    const wizard = await asKey('/wizard/sessions', { goal: 'Sort the mail' });
    // This suite's API has no model, so it begins no conversation: the two it asks are stored directly.
    const conversationOf = async (owner: string) =>
      (await createConversation(h.stack.knex, { workspaceId, owner, agentId: null, title: 'Fuzzed' })).id;
    const personId = (await person.call('/me')).body.user.id;
    conversations.key = await conversationOf(`key:${t.keyRecord.id}`);
    conversations.session = await conversationOf(`user:${personId}`);
    Object.assign(ids, {
      agents: agent.id,
      runs: run.id,
      approvals: approval,
      reviews: review,
      triggers: webhook.id,
      hooks: webhook.id,
      forms: form.id,
      'run-links': link.id,
      invitations: invitation.id,
      members: (await viewer.call('/me')).body.user.id,
      skills: skill.id,
      sources: ((await sources.json()) as Json).data[0].id,
      connections: connection.id,
      wizard: wizard.id,
      token: link.token,
      invitationToken: new URL(invitation.url).pathname.split('/').pop()!,
      workspaceId,
    });
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  // The same kind of rule anywhere else: a time zone is an IANA name the runtime knows (a connector's calendar); a
  // key's expiry is a time still to come.
  const semanticRefusals = [/not a time zone/, /expires_at: must be in the future/];

  /**
   * The codes of a refusal for the request's shape: its body (invalid_body), or one of its parameters
   * (invalid_<name>, or the code api/query-params.ts names for it). A refusal of what the shape carries (a wrong
   * two-factor code, a transition the agent cannot make) has a code of its own.
   */
  const shapeCodes = (op: Json) =>
    new Set([
      'invalid_body',
      'invalid_cursor',
      'invalid_version',
      'invalid_date',
      ...(op.parameters ?? []).map((p: Json) => `invalid_${p.name}`),
    ]);

  /** The value of a path parameter: a real object where the path names one (a DELETE gets another id). */
  function pathValue(template: string, name: string, method: string, as: As, sampler: SchemaSampler): string {
    const first = template.split('/')[1];
    if (method === 'DELETE' || first === 'api-keys') return sampler.uuid(); // the key the suite uses stays
    if (template.startsWith('/public/run-links/')) return name === 'token' ? ids.token : sampler.uuid();
    if (template.startsWith('/public/invitations/')) return ids.invitationToken;
    if (template.startsWith('/auth/sso/')) return ids.workspaceId;
    if (template.startsWith('/chat/conversations/')) return conversations[as];
    if (template.startsWith('/wizard/sessions/')) return ids.wizard;
    if (name === 'key') return 'fuzzed-key';
    if (name === 'version') return '1';
    if (name === 'id' || name === 'userId') return ids[first] ?? sampler.uuid();
    return sampler.uuid();
  }

  const fill = (template: string, value: (name: string) => string) =>
    template.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(value(name)));

  /** The requests of one operation: valid, invalid and hostile ones. */
  function casesOf(template: string, method: string, op: Json, sampler: SchemaSampler, as: As): Case[] {
    const params: Json[] = op.parameters ?? [];
    const queryParams = params.filter((p) => p.in === 'query');
    const jsonSchema = op.requestBody?.content?.['application/json']?.schema;
    const formSchema = op.requestBody?.content?.['multipart/form-data']?.schema;
    const path = fill(template, (name) => pathValue(template, name, method, as, sampler));
    const queryOf = (values: Record<string, unknown>) =>
      Object.entries(values)
        .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
        .join('&');
    // A cursor is opaque (only one this API handed out is valid): valid requests go without one.
    const validQuery = (mode: Mode) => {
      const values: Record<string, unknown> = {};
      for (const p of queryParams) {
        if (p.name === 'cursor') continue;
        if (!p.required && (mode === 'min' || (mode !== 'max' && sampler.chance(0.5)))) continue;
        const v = sampler.valid(p.schema, mode);
        if (v !== undefined) values[p.name] = v;
      }
      return values;
    };
    const out: Case[] = [];
    const add = (c: Omit<Case, 'method' | 'path'> & { path?: string }) => out.push({ method, path, ...c });

    // Valid: the smallest, the largest, awkward and random requests the document allows.
    for (const mode of ['min', 'max', 'edge', 'random'] as const) {
      const body = jsonSchema ? sampler.valid(jsonSchema, mode) : undefined;
      if (jsonSchema && body === undefined) continue; // the generator found none: not the server's fault
      add({
        strategy: `valid ${mode}`,
        query: queryOf(validQuery(mode)),
        body: jsonSchema ? JSON.stringify(body) : formSchema ? multipart(sampler, formSchema, mode) : undefined,
        valid: true,
      });
    }
    // Invalid: one rule of the body or of a query parameter broken.
    if (jsonSchema) {
      for (const mode of ['min', 'max', 'edge', 'random'] as const) {
        const body = sampler.valid(jsonSchema, mode);
        const broken = body === undefined ? undefined : sampler.breakOne(jsonSchema, body);
        if (broken) add({ strategy: `invalid body (${broken.how})`, body: JSON.stringify(broken.value), valid: false });
      }
    }
    for (const p of queryParams.filter((q) => q.name !== 'cursor')) {
      const good = validQuery('min');
      const bad = sampler.breakOne(p.schema, sampler.valid(p.schema, 'random'));
      // A query value is text: only what stays wrong as text is sent (a number for a string is not).
      if (bad && !(typeof bad.value === 'number' && p.schema.type === 'string') && typeof bad.value !== 'object')
        add({
          strategy: `invalid query ${p.name} (${bad.how})`,
          query: queryOf({ ...good, [p.name]: bad.value }),
          body: jsonSchema ? JSON.stringify(sampler.valid(jsonSchema, 'min')) : undefined,
          valid: false,
        });
    }
    // Text a loose parser reads as a number or a date, which the document's integer or date-time is not.
    const looseText = ['', ' 5', '0x10', '1e2', '5.5', '0', '12345', 'true', '2026-11-01 09:30', '0000-01-01'];
    for (const p of queryParams.filter((q) => q.name !== 'cursor')) {
      const wrong = looseText.filter((t) => !queryTextAccepted(sampler, p.schema, t));
      if (!wrong.length) continue;
      const text = sampler.pick(wrong);
      add({
        strategy: `invalid query ${p.name} (${JSON.stringify(text)})`,
        query: queryOf({ ...validQuery('min'), [p.name]: text }),
        body: jsonSchema ? JSON.stringify(sampler.valid(jsonSchema, 'min')) : undefined,
        valid: false,
      });
    }
    for (const p of queryParams.filter((q) => q.required)) {
      const values = validQuery('min');
      delete values[p.name];
      add({ strategy: `required query ${p.name} left out`, query: queryOf(values), valid: false });
    }

    // Hostile: no claim about validity, only no 5xx and problem+json.
    const base = jsonSchema ? sampler.valid(jsonSchema, 'max') : undefined;
    const bodyText = base === undefined ? undefined : JSON.stringify(base);
    add({
      strategy: 'a cookie that does not decode',
      query: queryOf(validQuery('random')),
      body: bodyText,
      badCookie: true,
    });
    if (template.includes('{'))
      add({
        strategy: 'U+0000 and odd text in the path',
        path: fill(template, () => sampler.uuid().slice(0, 8) + '\u0000x'),
        body: bodyText,
      });
    if (queryParams.length) {
      const odd = [
        '\u0000',
        '-889948116433619072',
        '99999999999999999999999',
        '1e400',
        '',
        '[]',
        'x'.repeat(3000),
        '0000-01-01T00:00:00Z',
        '9999-12-31T23:59:59-23:59',
      ];
      add({
        strategy: 'odd query values',
        query: queryParams.map((p) => `${p.name}=${encodeURIComponent(sampler.pick(odd))}`).join('&'),
        body: bodyText,
      });
      // Express reads a repeated parameter as an array; each of these parameters takes one value.
      const twice = validQuery('max');
      const [name, value] = Object.entries(twice)[0] ?? [];
      if (name)
        add({
          strategy: `query ${name} given twice`,
          query: `${queryOf(twice)}&${queryOf({ [name]: value })}`,
          body: jsonSchema ? JSON.stringify(sampler.valid(jsonSchema, 'min')) : undefined,
          valid: false,
        });
      if (queryParams.some((p) => p.name === 'cursor'))
        for (const parts of [
          ['x'],
          ['2026-01-01 00:00:00+00', 'not-a-uuid'],
          ['2026-13-45 99:99:99+99', '00000000-0000-4000-8000-000000000000'],
          ['0000-01-01 00:00:00+00', '00000000-0000-4000-8000-000000000000'],
          ['\u0000', '\u0000'],
          [1e300, 'NaN'],
          [],
        ])
          add({
            strategy: `a forged cursor ${JSON.stringify(parts)}`,
            query: `cursor=${Buffer.from(JSON.stringify(parts)).toString('base64url')}`,
          });
    }
    if (jsonSchema && base !== undefined) {
      add({ strategy: 'U+0000 in every string', body: JSON.stringify(mapStrings(base, (s) => `${s}\u0000`)) });
      add({
        strategy: 'a lone surrogate in every string',
        body: JSON.stringify(mapStrings(base, (s) => `${s}\ud800`)),
      });
      add({ strategy: '5,000-deep arrays', body: deepJson(5_000, 'array') });
      add({ strategy: '5,000-deep objects', body: deepJson(5_000, 'object') });
      if (base && typeof base === 'object' && !Array.isArray(base)) {
        const firstKey = Object.keys(base)[0] ?? 'value';
        add({
          strategy: '5,000-deep value in a field',
          body: JSON.stringify({ ...base, [firstKey]: '@@deep@@' }).replace('"@@deep@@"', deepJson(5_000, 'object')),
        });
        add({ strategy: 'wrong types', body: JSON.stringify(wrongTypes(base)) });
        add({ strategy: 'required fields left out', body: '{}' });
      }
      add({
        strategy: 'huge integers',
        body: JSON.stringify(mapNumbers(base, () => 1e300)).replaceAll('1e+300', '99999999999999999999999999'),
      });
      add({ strategy: 'over-long strings', body: JSON.stringify(mapStrings(base, (s) => s.padEnd(20_000, 'y'))) });
      add({ strategy: 'not JSON', body: '{"unterminated": ' });
    }
    if (formSchema) {
      const form = new FormData();
      form.append('name', 'x\u0000y');
      form.append('goal', 'y'.repeat(20_000));
      form.append('files', new Blob(['\u0000\u0001'], { type: 'application/octet-stream' }), 'odd\u0000name.bin');
      add({ strategy: 'an odd upload', body: form });
    }
    return out;
  }

  /**
   * Whether the document accepts a query parameter sent as this text: a number-typed parameter takes the digits of
   * a number (what a client serializes one to), any other its schema checks the text itself.
   */
  function queryTextAccepted(sampler: SchemaSampler, schema: Json, text: string): boolean {
    const s = sampler.resolve(schema);
    if (s.type === 'integer' || s.type === 'number')
      return /^-?\d+(\.\d+)?$/.test(text) && sampler.accepts(schema, Number(text));
    return sampler.accepts(schema, text);
  }

  /** A multipart form the schema allows: its text fields, and a small text file for each file field. */
  function multipart(sampler: SchemaSampler, schema: Json, mode: Mode): FormData {
    const form = new FormData();
    for (const [name, prop] of Object.entries<Json>(schema.properties ?? {})) {
      if (prop.type === 'array') {
        form.append(name, new Blob(['Some text.'], { type: 'text/plain' }), `file-${mode}.txt`);
      } else if (schema.required?.includes(name) || mode !== 'min') {
        const v = sampler.valid(prop, mode);
        if (v !== undefined) form.append(name, String(v));
      }
    }
    return form;
  }

  /** Each field of the value as another type than it is. */
  function wrongTypes(value: Json): Json {
    const swap = (v: Json): Json =>
      typeof v === 'string'
        ? 7
        : typeof v === 'number'
          ? 'seven'
          : typeof v === 'boolean'
            ? 'true'
            : Array.isArray(v)
              ? { 0: v[0] ?? null }
              : v === null
                ? []
                : [v];
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, swap(v)]));
  }

  async function send(c: Case, as: As) {
    const headers: Record<string, string> = {};
    if (typeof c.body === 'string') headers['content-type'] = 'application/json';
    if (c.badCookie) headers.cookie = 'cadre_session=%E0%A4%A';
    else if (as === 'key') headers.authorization = `Bearer ${key}`;
    else {
      headers.cookie = [...person.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
      if (person.csrf) headers['x-csrf-token'] = person.csrf;
    }
    if (c.badCookie && as === 'key') headers.authorization = `Bearer ${key}`; // the key still counts
    const url = `${api.url}/v1${c.path}${c.query ? `?${c.query}` : ''}`;
    const res = await fetch(url, { method: c.method, headers, body: c.body, redirect: 'manual' });
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('text/event-stream')) {
      await res.body?.cancel();
      return { status: res.status, type, body: undefined, url };
    }
    const text = await res.text();
    let body: Json = text;
    try {
      body = type.includes('json') ? JSON.parse(text) : text;
    } catch {
      // reported below as a mismatch
    }
    return { status: res.status, type, body, url };
  }

  it('answers every generated request without a 5xx, with problem+json for a 4xx, and as the document says', async () => {
    const seed = Number(process.env.FUZZ_SEED ?? 20261201); // another seed explores other requests
    const sampler = new SchemaSampler(doc, rng(seed));
    const serverErrors: string[] = [];
    const notProblems: string[] = [];
    const undocumented: string[] = [];
    const validRefused: string[] = [];
    const invalidAccepted: string[] = [];
    const operations = Object.entries<Json>(doc.paths)
      .flatMap(([template, ops]) => Object.entries<Json>(ops).map(([method, op]) => ({ template, method, op })))
      .sort((a, b) => Number(sentLast.has(a.op.operationId)) - Number(sentLast.has(b.op.operationId)));
    let sent = 0;
    const started = Date.now();
    const hostileAs = (id: string): As =>
      sentLast.has(id) || operations.findIndex((o) => o.op.operationId === id) % 2 === 0 ? 'key' : 'session';
    for (const { template, method, op } of operations) {
      for (const as of sentLast.has(op.operationId) ? (['key'] as const) : (['key', 'session'] as const)) {
        for (const c of casesOf(template, method.toUpperCase(), op, sampler, as)) {
          // Hostile requests claim nothing about validity: each goes out once, as one or the other in turn.
          if (c.valid === undefined && !c.badCookie && as !== hostileAs(op.operationId)) continue;
          const r = await send(c, as);
          sent++;
          const bodyText = typeof c.body === 'string' ? c.body.slice(0, 160) : c.body ? '(multipart)' : '';
          const where = `${op.operationId} (${as}, ${c.strategy}) ${c.method} ${c.path}${c.query ? `?${c.query.slice(0, 120)}` : ''} ${bodyText}`;
          const said = `${r.status} ${r.body?.code ?? ''}: ${String(r.body?.detail ?? '').slice(0, 160)}`;
          if (r.status >= 500 && !isDeploymentAnswer(op.operationId, r.status, r.body))
            serverErrors.push(`${where} → ${said}`);
          else if (r.status >= 400 && !r.type.startsWith('application/problem+json'))
            notProblems.push(`${where} → ${r.status} ${r.type}`);
          else {
            try {
              checkResponse(c.method, r.url, r.status, r.type, r.body);
            } catch (err) {
              undocumented.push(`${where}: ${(err as Error).message.slice(0, 300)}`);
            }
          }
          const malformed = (r.status === 400 || r.status === 422) && shapeCodes(op).has(r.body?.code);
          const semantic =
            semanticBodies.has(op.operationId) || semanticRefusals.some((rule) => rule.test(r.body?.detail ?? ''));
          if (c.valid === true && malformed && !semantic) validRefused.push(`${where} → ${said}`);
          if (c.valid === false && r.status < 300) invalidAccepted.push(`${where} → ${r.status}`);
        }
        // What a valid request changed that the rest of the run relies on is put back.
        await h.stack.knex('workspaces').where({ id: workspaceId }).update({ plan: 'enterprise', api_enabled: true });
        await h.stack
          .knex('sessions')
          .whereIn('user_id', h.stack.knex('users').select('id').where({ email: person.email }))
          .update({ workspace_id: workspaceId });
        await h.stack.knex('agents').where({ id: ids.agents }).update({ state: 'live' });
      }
    }
    const report = (name: string, xs: string[]) => (xs.length ? [`${xs.length} ${name}:`, ...xs] : []);
    const problems = [
      ...report('answers with a 5xx', serverErrors),
      ...report('4xx answers that are not application/problem+json', notProblems),
      ...report('answers the document does not describe', undocumented),
      ...report('requests the document calls valid, refused for their shape', validRefused),
      ...report('requests the document calls invalid, accepted', invalidAccepted),
    ];
    if (problems.length) console.log(problems.join('\n')); // the whole list; the assertion shows its start
    assert.deepEqual(problems.slice(0, 60), [], `in ${sent} requests (${Math.round((Date.now() - started) / 1000)} s)`);
    assert.ok(sent > 1500, `${sent} requests sent`);
    // The session every request was sent with lasted to the end (the requests that end one are sent with the key).
    assert.equal((await person.call('/me')).status, 200);
  });

  it('answers the requests it found that were 500 with a 4xx problem', async () => {
    const cursor = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
    const someId = '00000000-0000-4000-8000-000000000000';
    const cases: [method: string, path: string, body: string | undefined, status: number, code: string][] = [
      // A cursor of a list by sequence number that is no number, or one of a list by time that is no time.
      ['GET', `/agents/${ids.agents}/timeline?cursor=${cursor(['x'])}`, undefined, 400, 'invalid_cursor'],
      ['GET', `/runs/${ids.runs}/items?cursor=${cursor([1e300])}`, undefined, 400, 'invalid_cursor'],
      ['GET', `/runs/${ids.runs}/logs?cursor=${cursor([])}`, undefined, 400, 'invalid_cursor'],
      ['GET', `/runs?cursor=${cursor(['2026-13-45 99:99:99+99', someId])}`, undefined, 400, 'invalid_cursor'],
      ['GET', `/agents?cursor=${cursor(['0000-01-01 00:00:00+00', someId])}`, undefined, 400, 'invalid_cursor'],
      // A lone surrogate (JSON's \ud800 escape alone) in what is kept as jsonb.
      ['PUT', `/agents/${ids.agents}/state-store/k`, '{"value":"a\\ud800"}', 422, 'invalid_body'],
      ['PUT', `/agents/${ids.agents}/state-store/k`, '{"value":{"\\udc00":1}}', 422, 'invalid_body'],
      ['POST', '/agents', '{"name":"n\\ud800","nodes":[{"kind":"input","id":"in","next":null}]}', 422, 'invalid_body'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      if (body) headers['content-type'] = 'application/json';
      const res = await fetch(`${api.url}/v1${path}`, { method, headers, body });
      const problem = (await res.json()) as Json;
      assert.equal(res.status, status, `${method} ${path} ${body ?? ''}: ${JSON.stringify(problem)}`);
      assert.equal(problem.code, code);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      checkResponse(method, `${api.url}/v1${path}`, res.status, res.headers.get('content-type')!, problem);
    }
  });
});
