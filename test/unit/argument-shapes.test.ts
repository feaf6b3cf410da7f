// A tool node's arguments as a form (ui/src/lib/workflow/argument-shapes.ts): every argument of every built-in tool
// gets a widget other than JSON, each the one its shape calls for (rows for a map, entries for a list, fields for an
// object, a choice of text / fields / list for a value of no type); the examples' arguments fit them; what is typed
// becomes numbers and booleans only where the schema takes them, templates staying text; and only schemas the form
// truly cannot show fall back to JSON, saying why.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { toolDefinitions } from '../../model/tools';
import type { ToolDefinition } from '../../model/tool-definition';
import {
  argumentFields,
  blankOf,
  duplicateNames,
  fits,
  MAX_DEPTH,
  modeOf,
  objectOf,
  readChoice,
  readText,
  shapeOf,
  shapeWords,
  textProblem,
  type JsonSchema,
  type Shape,
} from '../../ui/src/lib/workflow/argument-shapes';

// The catalogue exactly as GET /v1/tools answers it (api/routes/tools.ts).
const catalogue = Object.values(toolDefinitions as Record<string, ToolDefinition>).map((t) => ({
  name: t.name,
  input_schema: z.toJSONSchema(t.input, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
}));
const argument = (tool: string, name: string) => {
  const found = catalogue.find((t) => t.name === tool);
  assert.ok(found, `${tool} is in the catalogue`);
  const field = argumentFields(found.input_schema).find((f) => f.name === name);
  assert.ok(field, `${tool} takes ${name}`);
  return field;
};
const shapeOfArgument = (tool: string, name: string) => shapeOf(argument(tool, name).schema);
/** The shape's kind, with its parts' kinds: "list of fields(property: text, operator: choice, value: text)". */
function outline(shape: Shape): string {
  switch (shape.kind) {
    case 'list':
      return `list${shape.single ? ' or one' : ''} of ${outline(shape.itemShape)}`;
    case 'pairs':
      return `pairs of ${outline(shapeOf(shape.value, 1))}`;
    case 'fields':
      return `fields(${shape.fields.map((f) => `${f.name}: ${outline(shapeOf(f.schema, 1))}`).join(', ')})`;
    default:
      return shape.kind;
  }
}

describe('tool arguments as a form (workflow editor)', () => {
  it('draws every argument of every built-in tool without a JSON box', () => {
    assert.ok(catalogue.length > 40, 'the whole catalogue');
    const asJson = catalogue.flatMap((t) =>
      argumentFields(t.input_schema)
        .filter((f) => shapeOf(f.schema).kind === 'json')
        .map((f) => `${t.name}.${f.name}`),
    );
    assert.deepEqual(asJson, []);
  });

  it('gives each shape of the catalogue the widget it calls for', () => {
    // Maps: name → value rows.
    assert.equal(outline(shapeOfArgument('http.request', 'headers')), 'pairs of text');
    assert.equal(outline(shapeOfArgument('sql.update', 'set')), 'pairs of text');
    assert.equal(outline(shapeOfArgument('stripe.create_customer', 'metadata')), 'pairs of text');
    assert.equal(outline(shapeOfArgument('hubspot.create', 'properties')), 'pairs of text');
    // Lists of texts; email's `to` is one address or a list of them.
    assert.equal(outline(shapeOfArgument('file.generate', 'fields')), 'list of text');
    assert.equal(outline(shapeOfArgument('calendar.create_event', 'attendees')), 'list of text');
    assert.equal(outline(shapeOfArgument('email.send', 'to')), 'list or one of text');
    // Lists of objects with named properties, enums as choices; an object with named properties.
    assert.equal(
      outline(shapeOfArgument('hubspot.find', 'filters')),
      'list of fields(property: text, operator: choice, value: text)',
    );
    assert.equal(
      outline(shapeOfArgument('stripe.create_invoice', 'items')),
      'list of fields(description: text, amount: text)',
    );
    assert.equal(outline(shapeOfArgument('hubspot.find', 'sort')), 'fields(property: text, direction: choice)');
    // Lists of free-form objects: entries of rows; untyped values: text, fields or a list, at the person's choice.
    assert.equal(outline(shapeOfArgument('sql.insert', 'rows')), 'list of pairs of text');
    assert.equal(outline(shapeOfArgument('file.generate', 'rows')), 'list of pairs of any');
    assert.equal(outline(shapeOfArgument('slack.post_message', 'blocks')), 'list of pairs of any');
    for (const [tool, name] of [
      ['http.request', 'body'],
      ['state.set', 'value'],
      ['state.append', 'value'],
      ['state.get', 'default'],
    ])
      assert.deepEqual(shapeOfArgument(tool, name), { kind: 'any', nests: true }, `${tool}.${name}`);
    // Scalars: a boolean is a checkbox, an enum a choice, a number a text box that reads numbers.
    assert.equal(shapeOfArgument('stripe.create_invoice', 'finalize').kind, 'checkbox');
    assert.deepEqual(shapeOfArgument('http.request', 'method'), {
      kind: 'choice',
      options: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      default: 'POST',
    });
    assert.deepEqual(shapeOfArgument('state.increment', 'by'), { kind: 'text', types: ['number'], default: 1 });
  });

  it('labels arguments in words, with their help, and asks only for what has no default', () => {
    const headers = argument('http.request', 'headers');
    assert.equal(headers.label, 'Headers');
    assert.equal(headers.required, false, 'it defaults to none');
    assert.equal(argument('http.request', 'url').required, true);
    assert.equal(argument('stripe.create_invoice', 'days_until_due').label, 'Days until due');
    assert.match(argument('stripe.create_customer', 'metadata').help, /key-value pairs/);
  });

  it("fits every example agent's tool arguments into its form, none of them left to JSON", () => {
    const dir = path.join(__dirname, '..', '..', 'examples');
    let checked = 0;
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const spec = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
      for (const node of spec.nodes ?? []) {
        if (node.kind !== 'tool') continue;
        const tool = catalogue.find((t) => t.name === node.tool);
        assert.ok(tool, `${file}: ${node.tool}`);
        for (const field of argumentFields(tool.input_schema)) {
          if (!(field.name in node.arguments)) continue;
          const shape = shapeOf(field.schema);
          assert.notEqual(shape.kind, 'json', `${file} ${node.id}.${field.name}`);
          assert.ok(fits(shape, node.arguments[field.name]), `${file} ${node.id}.${field.name}`);
          checked++;
        }
      }
    }
    assert.ok(checked >= 15, `the examples' arguments (${checked})`);
    // The untyped values of the examples open in the mode their value has.
    assert.equal(modeOf({ id: '{{id}}', amount: '{{amount}}' }), 'fields');
    assert.equal(modeOf([{ a: 1 }]), 'list');
    assert.equal(modeOf('{{amount}}'), 'text');
    assert.equal(modeOf(undefined), 'text', 'an empty value starts as text');
  });

  it('reads typed text as numbers and booleans only where the schema takes them, templates staying text', () => {
    // A number: any number written in full; a template (or anything else) stays as typed, for the tool run to read.
    assert.equal(readText('12.5', ['number']), 12.5);
    assert.equal(readText(' 7 ', ['integer']), 7);
    assert.equal(readText('{{amount}}', ['number']), '{{amount}}');
    assert.equal(readText('007', ['integer']), 7);
    // Text: kept exactly, even when it reads as a number.
    assert.equal(readText('007', ['string']), '007');
    assert.equal(readText('true', ['string']), 'true');
    assert.equal(readText('  padded ', ['string']), '  padded ');
    // Text or a number (a row to insert): only what a number is written as, so "007" and "1.50" stay text.
    assert.equal(readText('12', ['string', 'number', 'boolean', 'null']), 12);
    assert.equal(readText('1.50', ['string', 'number', 'boolean', 'null']), '1.50');
    assert.equal(readText('007', ['string', 'number', 'boolean', 'null']), '007');
    assert.equal(readText('false', ['string', 'number', 'boolean', 'null']), false);
    assert.equal(readText('FALSE', ['string', 'boolean']), 'FALSE');
    assert.equal(readText('FALSE', ['boolean']), false);
    // No declared type (a body's field): the same, a number or true/false only when written as one.
    assert.equal(readText('1000', []), 1000);
    assert.equal(readText('{{amount}}', []), '{{amount}}');
    assert.equal(readText('0012', []), '0012');
    // Empty: left out when optional (the tool's default applies), else empty text (or null where only null fits).
    assert.equal(readText('', ['string'], true), undefined);
    assert.equal(readText('  ', [], false), '');
    assert.equal(readText('', ['number', 'null']), null);
    // What will not do is said in words; a template always will.
    assert.match(textProblem('ten', ['integer']), /Give a number/);
    assert.equal(textProblem('{{amount}} ', ['integer']), '');
    assert.equal(textProblem('ten', ['string', 'number']), '');
    assert.match(textProblem('yes', ['boolean']), /true or false/);
    // A choice's option as its value (enums may hold numbers).
    assert.equal(readChoice('2', [1, 2, 3]), 2);
    assert.equal(readChoice('GET', ['GET', 'POST']), 'GET');
    assert.equal(readChoice('', ['GET']), undefined);
  });

  it('keeps rows without a name out of the value, and names rows given the same name', () => {
    const rows: [string, unknown][] = [
      ['supplier', '{{supplier}}'],
      ['', 'not named yet'],
      ['amount', 1],
      ['supplier', 'again'],
    ];
    assert.deepEqual(objectOf(rows), { supplier: 'again', amount: 1 });
    assert.deepEqual(duplicateNames(rows), ['supplier']);
  });

  it('starts new values blank, objects with the fields they require', () => {
    const filters = shapeOfArgument('hubspot.find', 'filters');
    assert.equal(filters.kind, 'list');
    assert.deepEqual(blankOf(filters), []);
    if (filters.kind === 'list') assert.deepEqual(blankOf(filters.itemShape), { property: '' });
    const items = shapeOfArgument('stripe.create_invoice', 'items');
    if (items.kind === 'list') assert.deepEqual(blankOf(items.itemShape), { description: '', amount: '' });
    assert.equal(blankOf(shapeOfArgument('http.request', 'method')), 'POST');
    assert.equal(blankOf(shapeOfArgument('http.request', 'body')), '');
  });

  it('shows a value of another shape as text when it is text (a template), else as JSON', () => {
    const attendees = shapeOfArgument('calendar.create_event', 'attendees');
    assert.equal(fits(attendees, ['a@example.com']), true);
    assert.equal(fits(attendees, '{{attendees}}'), false, 'drawn as a text box with "Fill it in here instead"');
    assert.equal(fits(shapeOfArgument('email.send', 'to'), 'ops@example.com'), true, 'one address is one entry');
    assert.equal(fits(shapeOfArgument('http.request', 'headers'), ['x']), false);
    assert.equal(fits(shapeOf({}, MAX_DEPTH), { deep: true }), false, 'objects deeper than the form draws');
    assert.equal(fits(shapeOf({}, MAX_DEPTH), 'text'), true);
  });

  it('falls back to JSON, saying why, only for schemas a form cannot show', () => {
    const why = (schema: JsonSchema, depth = 0) => {
      const shape = shapeOf(schema, depth);
      assert.equal(shape.kind, 'json', JSON.stringify(schema));
      return shape.kind === 'json' ? shape.why : '';
    };
    const card = { type: 'object', properties: { number: { type: 'string' } } };
    const bank = { type: 'object', properties: { iban: { type: 'string' } } };
    assert.match(why({ oneOf: [card, bank] }), /one of several shapes/);
    assert.match(why({ $ref: '#/$defs/address' }), /definitions/);
    assert.match(why({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] }), /own/);
    assert.match(why({ type: ['string', 'object'] }), /string or object/);
    assert.match(why({ type: 'array', items: { type: 'array', items: { type: 'array', items: {} } } }, 1), /deeply/);
    // A part that cannot be shown makes its whole container JSON, not a form with a JSON box inside.
    assert.match(why({ type: 'array', items: { oneOf: [card, bank] } }), /one of several shapes/);
    // What can be shown is: nullable values, unions of scalars, one-or-many, MCP-style objects.
    assert.equal(shapeOf({ anyOf: [{ type: 'string' }, { type: 'null' }] }).kind, 'text');
    assert.deepEqual(shapeOf({ type: ['integer', 'null'] }), {
      kind: 'text',
      types: ['integer', 'null'],
      default: undefined,
    });
    assert.equal(shapeOf({ type: 'object' }).kind, 'pairs', 'an object of any fields');
    assert.equal(shapeOf({ type: 'object', additionalProperties: true }).kind, 'pairs');
    assert.deepEqual(shapeOf({ const: 'v1' }), { kind: 'choice', options: ['v1'], default: undefined });
  });

  it('describes each argument in words in the tool picker', () => {
    assert.equal(shapeWords(argument('http.request', 'headers').schema), 'names and values');
    assert.equal(shapeWords(argument('email.send', 'to').schema), 'text, or a list of them');
    assert.equal(shapeWords(argument('sql.insert', 'rows').schema), 'list of names and values');
    assert.equal(shapeWords(argument('http.request', 'body').schema), 'any value');
    assert.equal(shapeWords(argument('hubspot.find', 'sort').schema), 'fields: property, direction');
    assert.equal(shapeWords(argument('stripe.create_invoice', 'finalize').schema), 'yes or no');
  });
});
