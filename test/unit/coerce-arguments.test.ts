// Tool arguments fitted to their JSON Schema: a text that plainly renders the type asked for becomes that type, through
// objects and arrays; anything else is refused naming the argument, the value and the type. Stricter than Ajv's
// coerceTypes, which turns "" into 0 and a scalar into an array.
import assert from 'node:assert/strict';
import { ArgumentTypeError, coerceArguments } from '../../activities/tools/coerce-arguments';

const refused = (args: Record<string, unknown>, schema: object, message: string) =>
  assert.throws(
    () => coerceArguments(args, schema),
    (err: unknown) => err instanceof ArgumentTypeError && err.message === message,
  );

describe('tool arguments fitted to their schema', () => {
  const pet = {
    type: 'object',
    required: ['petId'],
    properties: {
      petId: { type: 'integer' },
      weight: { type: 'number' },
      vaccinated: { type: 'boolean' },
      owner: { type: ['string', 'null'] },
      chip: { type: ['integer', 'null'] },
      name: { type: 'string' },
      limit: { type: 'integer' },
    },
  };

  it('reads integers, numbers and booleans written as text', () => {
    assert.deepEqual(
      coerceArguments({ petId: '7', weight: '7.5', vaccinated: 'true', limit: ' 20 ', name: '007' }, pet),
      { petId: 7, weight: 7.5, vaccinated: true, limit: 20, name: '007' },
    );
    assert.deepEqual(coerceArguments({ petId: '-3', weight: '1e-3', vaccinated: 'FALSE' }, pet), {
      petId: -3,
      weight: 0.001,
      vaccinated: false,
    });
    assert.deepEqual(coerceArguments({ petId: '7.0' }, pet), { petId: 7 }, 'a whole number written with a point');
  });

  it('keeps values that already fit, and writes a number where only text is taken', () => {
    const args = { petId: 7, weight: 2, vaccinated: false, owner: 'ann', name: 12345 };
    assert.deepEqual(coerceArguments(args, pet), { ...args, name: '12345' });
    assert.deepEqual(coerceArguments({ petId: 1, owner: '' }, pet), { petId: 1, owner: '' }, 'text stays text');
  });

  it('reads "" and "null" as null only where the schema allows null', () => {
    assert.deepEqual(coerceArguments({ petId: '1', chip: '' }, pet), { petId: 1, chip: null });
    assert.deepEqual(coerceArguments({ petId: '1', chip: 'null' }, pet), { petId: 1, chip: null });
    refused({ petId: '' }, pet, 'argument "petId": "" is not an integer');
    refused({ petId: 'null' }, pet, 'argument "petId": "null" is not an integer');
  });

  it('leaves out an empty optional argument that takes neither text nor null', () => {
    assert.deepEqual(coerceArguments({ petId: '1', limit: '', weight: ' ' }, pet), { petId: 1 });
  });

  it('refuses what is not an unambiguous rendering, naming the argument, the value and the type', () => {
    refused({ petId: 'seven' }, pet, 'argument "petId": "seven" is not an integer');
    refused({ petId: '7.5' }, pet, 'argument "petId": "7.5" is not an integer');
    refused({ petId: 1, weight: 'NaN' }, pet, 'argument "weight": "NaN" is not a number');
    refused({ petId: 1, weight: '0x10' }, pet, 'argument "weight": "0x10" is not a number');
    refused({ petId: 1, weight: '1,5' }, pet, 'argument "weight": "1,5" is not a number');
    refused({ petId: 1, vaccinated: 'yes' }, pet, 'argument "vaccinated": "yes" is not true or false');
    refused({ petId: 1, vaccinated: '1' }, pet, 'argument "vaccinated": "1" is not true or false');
    refused({ petId: 1, chip: 'x' }, pet, 'argument "chip": "x" is not an integer or null');
    refused({ petId: 7.5 }, pet, 'argument "petId": 7.5 is not an integer');
  });

  it('walks objects and arrays as the schema describes them, naming nested arguments by their path', () => {
    const order = {
      type: 'object',
      properties: {
        body: {
          type: 'object',
          properties: {
            quantity: { type: 'integer', minimum: 1 },
            lines: { type: 'array', items: { type: 'object', properties: { price: { type: 'number' } } } },
            tags: { type: 'array', items: { type: 'string' } },
          },
        },
      },
    };
    assert.deepEqual(
      coerceArguments({ body: { quantity: '3', lines: [{ price: '9.90' }, { price: 2 }], tags: ['a'] } }, order),
      { body: { quantity: 3, lines: [{ price: 9.9 }, { price: 2 }], tags: ['a'] } },
    );
    refused(
      { body: { lines: [{ price: 1 }, { price: 'free' }] } },
      order,
      'argument "body.lines[1].price": "free" is not a number',
    );
    // An array or object given as its JSON text (a template with text around it writes one so).
    assert.deepEqual(coerceArguments({ body: '{"quantity": "2", "tags": ["x"]}' }, order), {
      body: { quantity: 2, tags: ['x'] },
    });
    // Never a scalar wrapped into an array, as Ajv's coerceTypes would.
    refused({ body: { tags: 'a' } }, order, 'argument "body.tags": "a" is not an array');
  });

  it('follows local $refs, allOf, and takes the anyOf branch the value fits or can be read as', () => {
    const schema = {
      type: 'object',
      $defs: { Count: { type: 'integer' } },
      properties: {
        count: { $ref: '#/$defs/Count' },
        both: { allOf: [{ type: 'number' }, { minimum: 0 }] },
        either: { anyOf: [{ type: 'boolean' }, { type: 'integer' }] },
        free: {},
      },
    };
    assert.deepEqual(coerceArguments({ count: '4', both: '2.5', either: '3', free: '5' }, schema), {
      count: 4,
      both: 2.5,
      either: 3,
      free: '5',
    });
    assert.deepEqual(coerceArguments({ either: 'true' }, schema), { either: true });
    // No branch reads it: left to the validator, which names every branch.
    assert.deepEqual(coerceArguments({ either: 'maybe' }, schema), { either: 'maybe' });
  });

  it('keeps every argument as an own property, whatever its name', () => {
    const args = JSON.parse('{"petId": "1", "__proto__": {"polluted": "yes"}}') as Record<string, unknown>;
    const fitted = coerceArguments(args, pet);
    assert.deepEqual(Object.keys(fitted), ['petId', '__proto__']);
    assert.equal((fitted as { polluted?: string }).polluted, undefined);
    assert.equal(Object.getPrototypeOf(fitted), Object.prototype);
  });

  it('reads OpenAPI 3.0 nullable and enum values', () => {
    const schema = {
      type: 'object',
      properties: { size: { enum: [1, 2, 3] }, note: { type: 'integer', nullable: true } },
    };
    assert.deepEqual(coerceArguments({ size: '2', note: '' }, schema), { size: 2, note: null });
  });
});
