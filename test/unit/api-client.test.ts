// The typed client is generated from the OpenAPI document: the committed file must be what the document gives.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { generatePaths, pathsFile, typeOf } from '../../api/client/generate';

describe('typed API client', () => {
  it('is in step with the OpenAPI document (run npm run gen:client after changing a route)', () => {
    const root = path.resolve(__dirname, '../..');
    const fresh = execFileSync(path.join(root, 'node_modules/.bin/prettier'), ['--stdin-filepath', pathsFile], {
      input: generatePaths(),
      encoding: 'utf8',
    });
    assert.ok(fresh === fs.readFileSync(pathsFile, 'utf8'), 'api/client/paths.ts is stale: npm run gen:client');
  });

  it('turns the schema forms the document uses into TypeScript types', () => {
    assert.equal(typeOf({ type: 'string' }), 'string');
    assert.equal(typeOf({ anyOf: [{ type: 'string' }, { type: 'null' }] }), '(string) | (null)');
    assert.equal(typeOf({ enum: ['a', 'b'] }), '"a" | "b"');
    assert.equal(typeOf({ $ref: '#/components/schemas/Run' }), 'components[\'schemas\']["Run"]');
    assert.equal(
      typeOf({
        type: 'object',
        properties: { id: { type: 'integer' }, n: { type: 'array', items: { type: 'boolean' } } },
        required: ['id'],
      }),
      '{\n  id: number;\n  n?: (boolean)[];\n}',
    );
    // What only narrows the values (a second pattern, one of two properties required) leaves the type as it is.
    assert.equal(typeOf({ type: 'string', pattern: '\\S', allOf: [{ pattern: '^[^\\u0000]*$' }] }), 'string');
    assert.equal(
      typeOf({
        type: 'object',
        properties: { a: { type: 'string' }, b: { type: 'string' } },
        anyOf: [{ required: ['a'] }, { required: ['b'] }],
      }),
      '{\n  a?: string;\n  b?: string;\n}',
    );
    assert.equal(
      typeOf({
        anyOf: [
          { type: 'string', format: 'date-time' },
          { type: 'string', format: 'date' },
        ],
      }),
      '(string)',
    );
  });
});
