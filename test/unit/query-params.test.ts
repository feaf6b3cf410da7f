// Query parameters: one zod object per operation (api/query-params.ts) is both what the route parses and what the
// OpenAPI document declares. These checks keep it that way: every object names a documented operation and is its
// whole query; no route reads `req.query` any other way; and the parsed values and problems are what a caller meets.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { openApiDocument } from '../../api/openapi';
import { ApiError } from '../../api/problem';
import { parseQuery, queries } from '../../api/query-params';

const problemOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
    return { status: err.status, code: err.code, message: err.message };
  }
  assert.fail('expected a 400');
};

describe('query parameters (api/query-params.ts)', () => {
  const doc = openApiDocument('http://cadre.test');
  type Param = { name: string; in: string; required: boolean; schema: Record<string, unknown> };
  type Operation = { operationId: string; parameters?: Param[] };
  const operations = new Map<string, Operation>();
  for (const methods of Object.values(doc.paths)) {
    for (const op of Object.values(methods) as Operation[]) operations.set(op.operationId, op);
  }

  it('declares, for each operation with a query, exactly the parameters its route parses', () => {
    for (const [id, q] of Object.entries(queries)) {
      const op = operations.get(id);
      assert.ok(op, `queries.${id} names no operation of the document`);
      const declared = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      assert.deepEqual(declared.sort(), Object.keys(q.schema.shape).sort(), id);
    }
    const withQuery = [...operations].filter(([, op]) => op.parameters?.some((p) => p.in === 'query'));
    assert.deepEqual(withQuery.map(([id]) => id).sort(), Object.keys(queries).sort());
  });

  it('documents limits, defaults and required parameters as the routes apply them', () => {
    const param = (id: string, name: string) => operations.get(id)!.parameters!.find((p) => p.name === name)!;
    assert.deepEqual(param('listRunItems', 'limit').schema, {
      default: 100,
      type: 'integer',
      minimum: 1,
      maximum: 1000,
    });
    assert.equal(param('discoverSso', 'email').required, true);
    const formats = (param('listRuns', 'from').schema.anyOf as { format: string }[]).map((b) => b.format);
    assert.deepEqual(formats, ['date-time', 'date']);
    assert.deepEqual(param('listRuns', 'status').schema.enum, [
      'running',
      'paused',
      'completed',
      'failed',
      'needs_review',
      'cancelled',
      'skipped',
    ]);
  });

  it('no route reads req.query except through parseQuery with its operation', () => {
    const routes = path.resolve(__dirname, '../../api/routes');
    const stray: string[] = [];
    for (const file of fs.readdirSync(routes)) {
      const text = fs.readFileSync(path.join(routes, file), 'utf8');
      for (const m of text.matchAll(/.*req\.query.*/g)) {
        if (!/parseQuery\(queries\.\w+, req\.query\)/.test(m[0])) stray.push(`${file}: ${m[0].trim()}`);
      }
    }
    assert.deepEqual(stray, []);
  });

  it('fills defaults, coerces numbers and dates, and reads an empty cursor as none', () => {
    const q = parseQuery(queries.listRuns, { status: 'failed', from: '2026-11-01', cursor: '' });
    assert.equal(q.limit, 50);
    assert.equal(q.status, 'failed');
    assert.equal(q.cursor, undefined);
    assert.equal(q.from?.toISOString(), '2026-11-01T00:00:00.000Z');
    assert.equal(parseQuery(queries.listRunItems, { limit: '1000', from_seq: '0' }).limit, 1000);
    assert.equal(parseQuery(queries.dailyStats, {}).days, 30);
  });

  it('answers 400 with the parameter, what it must be, and the code callers already know', () => {
    assert.deepEqual(
      problemOf(() => parseQuery(queries.listApprovals, { limit: '0' })),
      { status: 400, code: 'invalid_limit', message: 'limit must be a whole number from 1 to 500' },
    );
    assert.equal(
      problemOf(() => parseQuery(queries.listRunItems, { limit: '1001' })).message,
      'limit must be a whole number from 1 to 1000',
    );
    assert.equal(problemOf(() => parseQuery(queries.listRuns, { limit: ['1', '2'] })).code, 'invalid_limit');
    // `?base_version=1&base_version=2`, as Express reads it: which one was meant is not guessed.
    assert.deepEqual(
      problemOf(() => parseQuery(queries.updateAgent, { base_version: ['1', '2'] })),
      { status: 400, code: 'invalid_base_version', message: 'base_version is given more than once: give it once' },
    );
    assert.equal(problemOf(() => parseQuery(queries.listRuns, { status: 'bogus' })).code, 'invalid_status');
    assert.equal(problemOf(() => parseQuery(queries.listRuns, { from: 'yesterday' })).code, 'invalid_date');
    // What JavaScript would read as a number or a date, the document's integer and date-time do not.
    for (const odd of ['', ' 5', '0x10', '1e2', '-0', '5.0'])
      assert.equal(problemOf(() => parseQuery(queries.getRunSkillContext, { item: odd })).code, 'invalid_item', odd);
    for (const odd of ['0', '12345', '2026-11-01 09:30', '2026-11-01T09:30:00'])
      assert.equal(problemOf(() => parseQuery(queries.listRuns, { to: odd })).code, 'invalid_date', odd);
    assert.equal(
      parseQuery(queries.listRuns, { to: '2026-11-01T09:30:00+02:00' }).to?.toISOString(),
      '2026-11-01T07:30:00.000Z',
    );
    assert.equal(problemOf(() => parseQuery(queries.listRuns, { agent_id: 'nope' })).code, 'invalid_agent_id');
    assert.equal(problemOf(() => parseQuery(queries.diffVersions, { from: '1' })).code, 'invalid_version');
    assert.equal(
      problemOf(() => parseQuery(queries.listSourceVersionPassages, { cursor: 'x' })).code,
      'invalid_cursor',
    );
    assert.deepEqual(
      problemOf(() => parseQuery(queries.discoverSso, {})),
      {
        status: 400,
        code: 'invalid_email',
        message: 'give your work email address as ?email=',
      },
    );
  });
});
