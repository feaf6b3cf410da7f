// The pure node-graph interpreter: paths, conditions, templates, transforms, routing and result merging.
import assert from 'node:assert/strict';
import { nodeSchema, type AgentNode, type Conditions } from '../../model/agent';
import {
  applyTransform,
  getPath,
  ItemError,
  matches,
  nextNodeId,
  render,
  saveResult,
  type ItemData,
} from '../../model/interpreter';

type TransformNode = Extract<AgentNode, { kind: 'transform' }>;

function transform(spec: Partial<Omit<TransformNode, 'kind' | 'id'>>): TransformNode {
  return nodeSchema.parse({ kind: 'transform', id: 't', ...spec }) as TransformNode;
}

function node(spec: Record<string, unknown>): AgentNode {
  return nodeSchema.parse(spec);
}

describe('interpreter', () => {
  describe('getPath', () => {
    const data = { a: { b: { c: 3 } }, list: [10, 20], zero: 0, nil: null };

    it('returns the whole item for $item', () => {
      assert.equal(getPath(data, '$item'), data);
    });

    it('follows dot paths into nested objects', () => {
      assert.equal(getPath(data, 'a.b.c'), 3);
      assert.deepEqual(getPath(data, 'a.b'), { c: 3 });
    });

    it('indexes arrays with numeric segments', () => {
      assert.equal(getPath(data, 'list.1'), 20);
    });

    it('keeps falsy values (0, null) rather than turning them into undefined', () => {
      assert.equal(getPath(data, 'zero'), 0);
      assert.equal(getPath(data, 'nil'), null);
    });

    it('returns undefined for missing fields and for paths through scalars or null', () => {
      assert.equal(getPath(data, 'missing'), undefined);
      assert.equal(getPath(data, 'a.x.y'), undefined);
      assert.equal(getPath(data, 'zero.foo'), undefined);
      assert.equal(getPath(data, 'nil.foo'), undefined);
      assert.equal(getPath('text', 'length'), undefined);
      assert.equal(getPath(undefined, 'a'), undefined);
    });
  });

  describe('matches', () => {
    const item = {
      status: 'Paid',
      amount: '1500',
      count: 7,
      note: 'Urgent: call back',
      tags: ['red', 'blue', 3],
      empty: '',
      nil: null,
      zero: 0,
      invoice: { total: 250 },
    };
    const m = (c: Conditions) => matches(c, item);

    it('equals compares as strings (so 7 equals "7") and follows dot paths', () => {
      assert.equal(m({ field: 'status', op: 'equals', value: 'Paid' }), true);
      assert.equal(m({ field: 'status', op: 'equals', value: 'paid' }), false);
      assert.equal(m({ field: 'count', op: 'equals', value: '7' }), true);
      assert.equal(m({ field: 'amount', op: 'equals', value: 1500 }), true);
      assert.equal(m({ field: 'invoice.total', op: 'equals', value: 250 }), true);
      assert.equal(m({ field: 'invoice.total', op: 'equals', value: 251 }), false);
    });

    it('not_equals is the negation of equals', () => {
      assert.equal(m({ field: 'status', op: 'not_equals', value: 'Open' }), true);
      assert.equal(m({ field: 'status', op: 'not_equals', value: 'Paid' }), false);
      assert.equal(m({ field: 'count', op: 'not_equals', value: '7' }), false);
    });

    it('contains on a string is a case-insensitive substring test', () => {
      assert.equal(m({ field: 'note', op: 'contains', value: 'urgent' }), true);
      assert.equal(m({ field: 'note', op: 'contains', value: 'CALL' }), true);
      assert.equal(m({ field: 'note', op: 'contains', value: 'email' }), false);
    });

    it('contains on a missing field is false for a non-empty needle', () => {
      assert.equal(m({ field: 'missing', op: 'contains', value: 'x' }), false);
    });

    it('contains on an array tests membership of an element (string-compared)', () => {
      assert.equal(m({ field: 'tags', op: 'contains', value: 'blue' }), true);
      assert.equal(m({ field: 'tags', op: 'contains', value: '3' }), true);
      assert.equal(m({ field: 'tags', op: 'contains', value: 'bl' }), false, 'no substring match inside elements');
      assert.equal(m({ field: 'tags', op: 'contains', value: 'green' }), false);
    });

    it('gt/gte/lt/lte compare numerically, accepting numeric strings on either side', () => {
      assert.equal(m({ field: 'amount', op: 'gt', value: 1000 }), true);
      assert.equal(m({ field: 'amount', op: 'gt', value: '1500' }), false);
      assert.equal(m({ field: 'amount', op: 'gte', value: '1500' }), true);
      assert.equal(m({ field: 'amount', op: 'gte', value: 1501 }), false);
      assert.equal(m({ field: 'count', op: 'lt', value: '10' }), true);
      assert.equal(m({ field: 'count', op: 'lt', value: 7 }), false);
      assert.equal(m({ field: 'count', op: 'lte', value: 7 }), true);
      assert.equal(m({ field: 'count', op: 'lte', value: '6.5' }), false);
    });

    it('numeric comparison is by value, not lexicographic ("9" < "10")', () => {
      assert.equal(matches({ field: 'n', op: 'lt', value: '10' }, { n: '9' }), true);
      assert.equal(matches({ field: 'n', op: 'gt', value: '10' }, { n: '9' }), false);
    });

    it('numeric comparisons are false when either side is not a number', () => {
      assert.equal(m({ field: 'status', op: 'gt', value: 1 }), false);
      assert.equal(m({ field: 'status', op: 'lt', value: 1 }), false);
      assert.equal(m({ field: 'missing', op: 'lte', value: 1 }), false);
      assert.equal(m({ field: 'empty', op: 'gte', value: 0 }), false, 'an empty string is not 0');
      assert.equal(m({ field: 'count', op: 'gt', value: 'abc' }), false);
    });

    it('exists is false for missing, null and empty-string values, true for 0', () => {
      assert.equal(m({ field: 'status', op: 'exists' }), true);
      assert.equal(m({ field: 'zero', op: 'exists' }), true);
      assert.equal(m({ field: 'empty', op: 'exists' }), false);
      assert.equal(m({ field: 'nil', op: 'exists' }), false);
      assert.equal(m({ field: 'missing', op: 'exists' }), false);
    });

    it('not_exists is true for missing, null and empty-string values, false for 0', () => {
      assert.equal(m({ field: 'empty', op: 'not_exists' }), true);
      assert.equal(m({ field: 'nil', op: 'not_exists' }), true);
      assert.equal(m({ field: 'missing', op: 'not_exists' }), true);
      assert.equal(m({ field: 'zero', op: 'not_exists' }), false);
      assert.equal(m({ field: 'status', op: 'not_exists' }), false);
    });

    it('an "all" group needs every condition', () => {
      const yes = { field: 'status', op: 'equals', value: 'Paid' } as const;
      const no = { field: 'count', op: 'gt', value: 100 } as const;
      assert.equal(m({ all: [yes, { field: 'count', op: 'gt', value: 5 }] }), true);
      assert.equal(m({ all: [yes, no] }), false);
      assert.equal(m({ all: [no, yes] }), false);
    });

    it('an "any" group needs one condition', () => {
      const yes = { field: 'status', op: 'equals', value: 'Paid' } as const;
      const no = { field: 'count', op: 'gt', value: 100 } as const;
      assert.equal(m({ any: [no, yes] }), true);
      assert.equal(m({ any: [no, { field: 'missing', op: 'exists' }] }), false);
    });
  });

  describe('render', () => {
    const data = { amount: 42, name: 'Ada', flags: ['x', 'y'], meta: { a: 1 }, nil: null, ok: false };

    it('a string that is exactly one placeholder keeps the value type', () => {
      assert.equal(render('{{amount}}', data), 42);
      assert.equal(render('{{ amount }}', data), 42, 'spaces inside the braces are allowed');
      assert.equal(render('{{ok}}', data), false);
      assert.deepEqual(render('{{flags}}', data), ['x', 'y']);
      assert.deepEqual(render('{{meta}}', data), { a: 1 });
      assert.equal(render('{{$item}}', data), data);
    });

    it('placeholders inside text are interpolated as strings, objects as JSON', () => {
      assert.equal(render('Hi {{name}}, you owe {{amount}}', data), 'Hi Ada, you owe 42');
      assert.equal(render('meta={{meta}} flags={{flags}}', data), 'meta={"a":1} flags=["x","y"]');
      assert.equal(render('ok={{ok}}', data), 'ok=false');
      assert.equal(render('{{name}}{{amount}}', data), 'Ada42');
    });

    it('missing and null fields inside text become empty strings', () => {
      assert.equal(render('[{{missing}}] [{{nil}}] [{{meta.zzz}}]', data), '[] [] []');
    });

    it('renders objects and arrays recursively and leaves non-strings alone', () => {
      const out = render(
        {
          to: '{{name}}',
          total: '{{amount}}',
          lines: ['{{flags}}', 'n={{amount}}', 7, true, null],
          nested: { deep: '{{meta.a}}' },
        },
        data,
      );
      assert.deepEqual(out, {
        to: 'Ada',
        total: 42,
        lines: [['x', 'y'], 'n=42', 7, true, null],
        nested: { deep: 1 },
      });
    });

    it('does not mutate the template', () => {
      const template = { a: '{{name}}', b: ['{{amount}}'] };
      render(template, data);
      assert.deepEqual(template, { a: '{{name}}', b: ['{{amount}}'] });
    });

    it('leaves text without placeholders unchanged', () => {
      assert.equal(render('plain {text}', data), 'plain {text}');
      assert.equal(render(5, data), 5);
    });
  });

  describe('applyTransform', () => {
    it('renames fields and leaves absent sources alone', () => {
      const out = applyTransform(transform({ rename: { first: 'given', ghost: 'spirit' } }), { first: 'Ada', x: 1 });
      assert.deepEqual(out, { given: 'Ada', x: 1 });
    });

    it('sets fields from templates (type-preserving for a whole placeholder) and into dot paths', () => {
      const out = applyTransform(
        transform({
          set: { full: '{{first}} {{last}}', total: '{{amount}}', 'meta.source': 'import', fixed: 10 },
        }),
        { first: 'Ada', last: 'Lovelace', amount: 12.5 },
      );
      assert.deepEqual(out, {
        first: 'Ada',
        last: 'Lovelace',
        amount: 12.5,
        full: 'Ada Lovelace',
        total: 12.5,
        meta: { source: 'import' },
        fixed: 10,
      });
    });

    it('casts "1,200.50" to the number 1200.5', () => {
      const out = applyTransform(transform({ cast: { amount: 'number' } }), { amount: '1,200.50' });
      assert.equal(out.amount, 1200.5);
    });

    it('casts to string and boolean', () => {
      const out = applyTransform(
        transform({ cast: { id: 'string', a: 'boolean', b: 'boolean', c: 'boolean', none: 'string' } }),
        {
          id: 17,
          a: 'Yes',
          b: 'no',
          c: 1,
        },
      );
      assert.deepEqual(out, { id: '17', a: true, b: false, c: true, none: '' });
    });

    it('a failed number cast throws an ItemError naming the field and the value', () => {
      assert.throws(
        () => applyTransform(transform({ cast: { amount: 'number' } }), { amount: 'twelve' }),
        (err: unknown) => {
          assert.ok(err instanceof ItemError);
          assert.equal((err as Error).message, 'field "amount" is not a number: "twelve"');
          return true;
        },
      );
    });

    it('an empty string does not cast to 0', () => {
      assert.throws(() => applyTransform(transform({ cast: { amount: 'number' } }), { amount: '' }), {
        message: 'field "amount" is not a number: ""',
      });
    });

    it('drops fields', () => {
      const out = applyTransform(transform({ drop: ['secret', 'absent'] }), { keep: 1, secret: 'x' });
      assert.deepEqual(out, { keep: 1 });
    });

    it('applies rename, set, cast and drop together', () => {
      const out = applyTransform(
        transform({
          rename: { amt: 'amount' },
          set: { label: '{{vendor}}: {{amt}}' },
          cast: { amount: 'number' },
          drop: ['vendor'],
        }),
        { amt: '2,000', vendor: 'ACME' },
      );
      // `set` templates read the item as it came in (before rename).
      assert.deepEqual(out, { amount: 2000, label: 'ACME: 2,000' });
    });

    it('does not mutate the input item', () => {
      const input: ItemData = { amt: '5', nested: { a: 1 }, secret: 's' };
      const before = structuredClone(input);
      const out = applyTransform(
        transform({ rename: { amt: 'amount' }, set: { 'nested.b': 2 }, cast: { amount: 'number' }, drop: ['secret'] }),
        input,
      );
      assert.deepEqual(input, before);
      assert.deepEqual(out, { amount: 5, nested: { a: 1, b: 2 } });
      assert.notEqual(out.nested, input.nested);
    });

    it('renaming a field to its own name keeps it', () => {
      const out = applyTransform(transform({ rename: { a: 'a' } }), { a: 1 });
      assert.deepEqual(out, { a: 1 });
    });
  });

  describe('nextNodeId', () => {
    const branch = node({
      kind: 'branch',
      id: 'route',
      branches: [
        { when: { field: 'amount', op: 'gt', value: 1000 }, next: 'big' },
        { when: { field: 'amount', op: 'gt', value: 100 }, next: 'medium' },
      ],
      otherwise: 'small',
    });

    it('takes the first branch whose condition matches', () => {
      assert.equal(nextNodeId(branch, { amount: 5000 }), 'big', 'both branches match; the first wins');
      assert.equal(nextNodeId(branch, { amount: 500 }), 'medium');
    });

    it('falls back to otherwise', () => {
      assert.equal(nextNodeId(branch, { amount: 5 }), 'small');
      assert.equal(nextNodeId(branch, {}), 'small');
    });

    it('returns null when no branch matches and there is no otherwise, or a branch ends the item', () => {
      const open = node({
        kind: 'branch',
        id: 'b',
        branches: [
          { when: { field: 'stop', op: 'exists' }, next: null },
          { when: { field: 'go', op: 'exists' }, next: 'go' },
        ],
      });
      assert.equal(nextNodeId(open, {}), null);
      assert.equal(nextNodeId(open, { stop: true, go: true }), null);
      assert.equal(nextNodeId(open, { go: 1 }), 'go');
    });

    it('follows next for other kinds and returns null at the end', () => {
      assert.equal(nextNodeId(node({ kind: 'transform', id: 't', next: 'x' }), {}), 'x');
      assert.equal(nextNodeId(node({ kind: 'transform', id: 't' }), {}), null);
      assert.equal(nextNodeId(node({ kind: 'output', id: 'o', next: null }), {}), null);
    });
  });

  describe('saveResult', () => {
    it('stores the result under saveAs when given (even an object)', () => {
      assert.deepEqual(saveResult({ a: 1 }, 'out', { b: 2 }), { a: 1, out: { b: 2 } });
      assert.deepEqual(saveResult({ a: 1 }, 'a', 'replaced'), { a: 'replaced' });
    });

    it('merges a plain object result into the item without saveAs', () => {
      assert.deepEqual(saveResult({ a: 1, b: 1 }, undefined, { b: 2, c: 3 }), { a: 1, b: 2, c: 3 });
    });

    it('stores scalars, arrays and null under "result" without saveAs', () => {
      assert.deepEqual(saveResult({ a: 1 }, undefined, 'ok'), { a: 1, result: 'ok' });
      assert.deepEqual(saveResult({ a: 1 }, undefined, [1, 2]), { a: 1, result: [1, 2] });
      assert.deepEqual(saveResult({ a: 1 }, undefined, null), { a: 1, result: null });
    });

    it('returns a new object and leaves the input alone', () => {
      const data = { a: 1 };
      const out = saveResult(data, undefined, { b: 2 });
      assert.notEqual(out, data);
      assert.deepEqual(data, { a: 1 });
    });
  });
});
