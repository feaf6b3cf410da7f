// api/CONTRACT.md is written by hand; every list of values it states (`status: "running"|"completed"|…`) must be
// the one the OpenAPI document states, which is generated from the enums the code uses (db/runs.ts, model/…). A value
// added to an enum fails this test until the overview lists it too, and a list this test cannot place fails it too.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { openApiDocument } from '../../api/openapi';

type Schema = Record<string, unknown>;

const contract = fs.readFileSync(path.join(__dirname, '../../api/CONTRACT.md'), 'utf8');
const doc = openApiDocument('http://cadre.test');
const schemas = doc.components.schemas as Record<string, Schema>;

const resolve = (s: unknown): Schema | undefined => {
  if (!s || typeof s !== 'object') return undefined;
  const ref = (s as Schema).$ref;
  return typeof ref === 'string' ? resolve(schemas[ref.replace('#/components/schemas/', '')]) : (s as Schema);
};

/** The values of `key`'s enum in `schema`, searched through nested objects, arrays and unions. */
function enumOf(schema: unknown, key: string, seen = new Set<unknown>()): string[] | undefined {
  const s = resolve(schema);
  if (!s || seen.has(s)) return undefined;
  seen.add(s);
  const own = (p: unknown): string[] | undefined => {
    const r = resolve(p);
    if (!r) return undefined;
    if (Array.isArray(r.enum)) return r.enum.filter((v): v is string => typeof v === 'string');
    for (const inner of [r.items, ...((r.anyOf ?? r.oneOf ?? []) as unknown[])]) {
      const found = own(inner);
      if (found) return found;
    }
    return undefined;
  };
  const properties = (s.properties ?? {}) as Record<string, unknown>;
  if (key in properties) return own(properties[key]);
  for (const inner of [
    ...Object.values(properties),
    s.items,
    ...((s.anyOf ?? s.oneOf ?? s.allOf ?? []) as unknown[]),
  ]) {
    const found = enumOf(inner, key, seen);
    if (found) return found;
  }
  return undefined;
}

type Operation = { operationId: string; requestBody?: Schema; responses: Record<string, Schema> };
const jsonSchemaOf = (part: Schema | undefined) =>
  (part?.content as Record<string, { schema: unknown }> | undefined)?.['application/json']?.schema;

/** `POST /v1/agents/:id/state` → its operation in the document. */
function operation(route: string): Operation | undefined {
  const [method, url] = route.split(' ');
  const template = url
    .replace(/^\/v1/, '')
    .replace(/\?.*$/, '')
    .replace(/:(\w+)/g, '{$1}');
  return (doc.paths as Record<string, Record<string, Operation>>)[template]?.[method.toLowerCase()];
}

/** Types CONTRACT.md names otherwise than the document, or that the document states inline. */
const typeSchemas: Record<string, () => unknown> = {
  Version: () => schemas.SourceVersion,
  RunItem: () => jsonSchemaOf(operation('GET /v1/runs/:id/items')!.responses['200']),
};

interface Stated {
  line: number;
  owner: string;
  key: string;
  values: string[];
}

/**
 * Every `key: "a"|"b"|…` of CONTRACT.md (values quoted or bare, over line breaks; type unions such as `string|null`
 * are not value lists), with what it belongs to: the nearest type (`Run`) or route (`POST /v1/…`) before it.
 */
function statedLists(): Stated[] {
  const value = String.raw`(?:"[\w.-]+"|[\w.-]+)`;
  const list = new RegExp(String.raw`"?(\w+)"?\s*:\s*\[?(${value}(?:\s*\|\s*${value})+)`, 'g');
  const owners = [...contract.matchAll(/`([A-Z]\w*|(?:GET|POST|PUT|PATCH|DELETE) \/v1\/[^`\s]*)`/g)];
  const found: Stated[] = [];
  for (const m of contract.matchAll(list)) {
    const values = m[2].split('|').map((v) => v.trim().replace(/^"|"$/g, ''));
    if (values.includes('null')) continue; // a type: `Run|null`, `string|null`
    const owner = owners.filter((o) => o.index! < m.index!).at(-1)?.[1] ?? '(none)';
    found.push({ line: contract.slice(0, m.index).split('\n').length, owner, key: m[1], values });
  }
  return found;
}

/** What the document says `key` of `owner` can be. */
function documented({ owner, key }: Stated): string[] | undefined {
  if (/^[A-Z]+ \//.test(owner)) {
    const op = operation(owner);
    if (!op) return undefined;
    const sources = [
      jsonSchemaOf(op.requestBody),
      ...Object.entries(op.responses)
        .filter(([status]) => status.startsWith('2'))
        .map(([, r]) => jsonSchemaOf(r)),
    ];
    for (const s of sources) {
      const values = enumOf(s, key);
      if (values) return values;
    }
    return undefined;
  }
  return enumOf(typeSchemas[owner]?.() ?? schemas[owner], key);
}

describe('api/CONTRACT.md states the enums the OpenAPI document states', () => {
  const lists = statedLists();

  it('finds the lists it states (types and routes)', () => {
    const named = lists.map((l) => `${l.owner}.${l.key}`);
    for (const expected of ['Run.status', 'Run.trigger', 'Approval.status', 'RunItem.status', 'Connection.kind'])
      assert.ok(named.includes(expected), `${expected} among ${named.join(', ')}`);
  });

  for (const stated of lists) {
    it(`${stated.owner} ${stated.key} (line ${stated.line})`, () => {
      const values = documented(stated);
      assert.ok(
        values,
        `CONTRACT.md line ${stated.line} lists ${stated.key} of ${stated.owner}, which has no enum "${stated.key}" in the OpenAPI document`,
      );
      const missing = values.filter((v) => !stated.values.includes(v));
      const extra = stated.values.filter((v) => !values.includes(v));
      assert.deepEqual(
        { missing, extra },
        { missing: [], extra: [] },
        `CONTRACT.md line ${stated.line}, ${stated.owner} ${stated.key}: ${JSON.stringify(stated.values)}; the document: ${JSON.stringify(values)}`,
      );
    });
  }
});
