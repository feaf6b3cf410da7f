// The output-schema rows of the workflow editor (ui/src/lib/workflow/output-schema.ts): every schema the shipped
// examples use becomes rows and back unchanged, nesting included, and a schema with a rule rows cannot show is left
// to the Advanced JSON rather than edited into something else.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { emptyRow, rowsOf, schemaOf } from '../../ui/src/lib/workflow/output-schema';

const examplesDir = path.join(__dirname, '..', '..', 'examples');

describe('output schema as rows (workflow editor)', () => {
  it("turns every example's output schema into rows and back, unchanged", () => {
    const schemas = fs
      .readdirSync(examplesDir)
      .filter((f) => f.endsWith('.json'))
      .flatMap((f) => JSON.parse(fs.readFileSync(path.join(examplesDir, f), 'utf8')).nodes ?? [])
      .map((n: { output_schema?: unknown }) => n.output_schema)
      .filter(Boolean);
    assert.ok(schemas.length >= 3, 'the examples have output schemas');
    for (const schema of schemas) {
      const rows = rowsOf(schema);
      assert.ok(rows, JSON.stringify(schema));
      assert.deepEqual(schemaOf(rows), schema);
    }
  });

  it('round-trips an object field and a list of objects, with required and descriptions kept', () => {
    const schema = {
      type: 'object',
      properties: {
        address: {
          type: 'object',
          description: 'where to send it',
          properties: { city: { type: 'string' }, zip: { type: 'string' } },
          required: ['city'],
        },
        lines: { type: 'array', items: { type: 'object', properties: { amount: { type: 'number' } } } },
        tags: { type: 'array', items: { type: 'string' } },
      },
      required: ['lines'],
    };
    const rows = rowsOf(schema)!;
    assert.deepEqual(
      rows.map((r) => [r.name, r.type, r.required, r.items, r.fields.map((f) => f.name)]),
      [
        ['address', 'object', false, 'string', ['city', 'zip']],
        ['lines', 'array', true, 'object', ['amount']],
        ['tags', 'array', false, 'string', []],
      ],
    );
    assert.deepEqual(schemaOf(rows), schema);
  });

  it('leaves a field still without a name out of the schema, and no fields as no schema', () => {
    assert.equal(schemaOf([]), undefined);
    assert.equal(schemaOf([emptyRow()]), undefined);
    const rows = [{ ...emptyRow(), name: 'vendor' }, emptyRow()];
    assert.deepEqual(schemaOf(rows), {
      type: 'object',
      properties: { vendor: { type: 'string' } },
      required: ['vendor'],
    });
  });

  it('shows no rows for a schema with rules they cannot hold, so the form never drops one', () => {
    const withRule = (property: object) => ({ type: 'object', properties: { x: property } });
    for (const schema of [
      withRule({ type: 'string', enum: ['a', 'b'] }),
      withRule({ type: 'number', minimum: 0 }),
      withRule({ anyOf: [{ type: 'string' }, { type: 'number' }] }),
      withRule({ type: 'array', items: { type: 'array', items: { type: 'string' } } }),
      { type: 'object', properties: {}, additionalProperties: false },
      { type: 'object', properties: { x: { type: 'string' } }, required: ['y'] },
    ])
      assert.equal(rowsOf(schema), null, JSON.stringify(schema));
    assert.deepEqual(rowsOf(undefined), []);
  });
});
