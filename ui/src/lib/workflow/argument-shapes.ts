// A tool node's arguments as a form, decided from the tool's JSON Schema (the catalogue's, drawn by z.toJSONSchema,
// or an MCP server's): which widget each value gets, and how what a person types becomes the value the node keeps.
// The widgets are drawn by components/workflow/ValueField.svelte; the decisions live here so they can be tested.
//
// - text: a string, number or boolean, or a choice of them (a CSV cell, a template such as {{amount}});
// - checkbox, choice: a boolean, an enum;
// - fields: an object whose properties the schema names (HubSpot's sort), one field each;
// - pairs: an object of any names (headers, metadata, a row to insert), one name → value row each;
// - list: entries of one shape (attendees, a Stripe invoice's lines), added and removed one by one;
// - any: a value of no declared type (a webhook's body, a state value), given as text, fields or a list at the
//   person's choice;
// - json: what the form cannot show (one of several object shapes, a reference, a tuple…), kept as JSON with a
//   sentence saying why.

// Relative, not $lib: the unit tests load this module outside SvelteKit.
import { isRecord } from '../format';
import { labelOf } from '../schema-form';

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema | JsonSchema[];
  prefixItems?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  nullable?: boolean;
  description?: string;
  default?: unknown;
}

export type Scalar = 'string' | 'number' | 'integer' | 'boolean' | 'null';

/** One property of an object whose properties the schema names (or one argument of a tool). */
export interface FieldShape {
  name: string;
  label: string;
  help: string;
  required: boolean;
  schema: JsonSchema;
}

export type Shape =
  | { kind: 'text'; types: Scalar[]; default?: unknown }
  | { kind: 'checkbox'; default?: unknown }
  | { kind: 'choice'; options: unknown[]; default?: unknown }
  | { kind: 'fields'; fields: FieldShape[] }
  | { kind: 'pairs'; value: JsonSchema }
  | { kind: 'list'; item: JsonSchema; itemShape: Shape; single: boolean }
  | { kind: 'any'; nests: boolean }
  | { kind: 'json'; why: string };

/** How a value of no declared type is given: one value (or a template), named fields, or a list of entries. */
export type Mode = 'text' | 'fields' | 'list';

/**
 * How deep objects and lists nest inside an argument before the form stops drawing them: an invoice's lines, each
 * with its fields, and a body with an object inside an object are drawn; a fourth level is JSON. Deeper forms stop
 * being readable, on a phone above all.
 */
export const MAX_DEPTH = 3;

const SCALARS = new Set<string>(['string', 'number', 'integer', 'boolean', 'null']);
const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

/** The schema without the `null` of an optional value (`anyOf: [X, {type: 'null'}]`, `type: [X, 'null']`). */
function withoutNull(schema: JsonSchema): JsonSchema {
  const options = schema.anyOf ?? schema.oneOf;
  if (options) {
    const real = options.filter((o) => o.type !== 'null');
    if (real.length === 1 && real.length < options.length)
      return { ...real[0], description: schema.description ?? real[0].description, default: schema.default };
  }
  return schema;
}

/** The scalar types a schema allows, or null when it allows something else too (or names no type). */
function scalarTypes(schema: JsonSchema): Scalar[] | null {
  if (schema.enum || 'const' in schema) return null;
  const options = schema.anyOf ?? schema.oneOf;
  if (options) {
    const all = options.map(scalarTypes);
    return all.every((t): t is Scalar[] => t !== null) ? [...new Set(all.flat())] : null;
  }
  const types = [schema.type ?? []].flat();
  if (types.length === 0 || !types.every((t) => SCALARS.has(t))) return null;
  return schema.nullable ? [...(types as Scalar[]), 'null'] : (types as Scalar[]);
}

const untyped = (schema: JsonSchema) =>
  Object.keys(schema).every((k) => k === 'description' || k === 'default' || k === 'title' || k === 'examples');

/** The widget of a value of this schema, `depth` objects or lists inside an argument (0: the argument itself). */
export function shapeOf(raw: JsonSchema | boolean | undefined, depth = 0): Shape {
  if (raw === true || raw === undefined) return { kind: 'any', nests: depth < MAX_DEPTH };
  if (raw === false) return { kind: 'json', why: 'The tool takes no value here.' };
  const schema = withoutNull(raw);
  if (untyped(schema)) return { kind: 'any', nests: depth < MAX_DEPTH };
  if (schema.$ref || schema.allOf)
    return { kind: 'json', why: 'Its schema refers to definitions the form does not follow.' };
  const options = schema.enum ?? ('const' in schema ? [schema.const] : undefined);
  if (options)
    return options.every(isScalar)
      ? { kind: 'choice', options, default: schema.default }
      : { kind: 'json', why: 'Its allowed values are objects or lists, which a list of choices cannot show.' };
  const scalars = scalarTypes(schema);
  if (scalars) {
    if (scalars.length === 1 && scalars[0] === 'boolean') return { kind: 'checkbox', default: schema.default };
    return { kind: 'text', types: scalars, default: schema.default };
  }
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return oneOrList(alternatives, depth);
  const types = [schema.type ?? []].flat().filter((t) => t !== 'null');
  if (types.length > 1) return { kind: 'json', why: `It takes ${types.join(' or ')}, which one form cannot show.` };
  if (depth >= MAX_DEPTH)
    return { kind: 'json', why: 'It is nested more deeply than the form shows; change it here as JSON.' };
  if (types[0] === 'array' || (!types[0] && schema.items)) return listShape(schema, depth, false);
  if (types[0] === 'object' || (!types[0] && (schema.properties || schema.additionalProperties)))
    return objectShape(schema, depth);
  return { kind: 'json', why: 'Its schema describes a value the form does not know how to ask for.' };
}

/** `anyOf: [X, list of X]` (email's `to`: one address, or several) is a list whose single entry may stand alone. */
function oneOrList(alternatives: JsonSchema[], depth: number): Shape {
  const real = alternatives.filter((o) => o.type !== 'null');
  const list = real.find((o) => o.type === 'array' && o.items && !Array.isArray(o.items));
  const one = real.find((o) => o !== list);
  if (real.length === 2 && list && one && scalarTypes(one) && scalarTypes(list.items as JsonSchema)) {
    const shape = listShape(list, depth, true);
    if (shape.kind === 'list') return shape;
  }
  return {
    kind: 'json',
    why: 'It takes one of several shapes, and the form cannot tell which one is meant; change it here as JSON.',
  };
}

function listShape(schema: JsonSchema, depth: number, single: boolean): Shape {
  if (Array.isArray(schema.items) || schema.prefixItems)
    return { kind: 'json', why: 'Each place in this list has a shape of its own, which the form cannot show.' };
  const item = schema.items ?? {};
  const itemShape = shapeOf(item, depth + 1);
  if (itemShape.kind === 'json') return itemShape;
  return { kind: 'list', item, itemShape, single };
}

function objectShape(schema: JsonSchema, depth: number): Shape {
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length === 0) {
    const value = schema.additionalProperties;
    if (value === false) return { kind: 'json', why: 'The tool takes an empty object here.' };
    const valueShape = shapeOf(value === true ? undefined : value, depth + 1);
    if (valueShape.kind === 'json') return valueShape;
    return { kind: 'pairs', value: value === true || value === undefined ? {} : value };
  }
  const required = new Set(schema.required ?? []);
  const fields = properties.map(([name, p]) => fieldOf(name, p, required.has(name)));
  const nested = fields.map((f) => shapeOf(f.schema, depth + 1)).find((s) => s.kind === 'json');
  return nested ?? { kind: 'fields', fields };
}

function fieldOf(name: string, schema: JsonSchema, required: boolean): FieldShape {
  // A field with a default is never required of the person: the tool fills it in.
  return {
    name,
    label: labelOf(name),
    help: schema.description ?? '',
    required: required && schema.default === undefined,
    schema,
  };
}

/** A tool's arguments, from its input schema, in the schema's order. */
export function argumentFields(inputSchema: Record<string, unknown> | undefined): FieldShape[] {
  const schema = (inputSchema ?? {}) as JsonSchema;
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, p]) => fieldOf(name, p, required.has(name)));
}

/** How a value of no declared type is given, read from the value itself (so a node opens as it was left). */
export function modeOf(value: unknown): Mode {
  if (Array.isArray(value)) return 'list';
  if (isRecord(value)) return 'fields';
  return 'text';
}

/** Whether the widget of `shape` can show `value`; one that cannot is shown as text (a template) or JSON. */
export function fits(shape: Shape, value: unknown): boolean {
  if (value === undefined) return true;
  switch (shape.kind) {
    case 'text':
    case 'choice':
      return isScalar(value);
    case 'checkbox':
      return typeof value === 'boolean';
    case 'fields':
    case 'pairs':
      return isRecord(value);
    case 'list':
      return Array.isArray(value) || (shape.single && isScalar(value));
    case 'any':
      return shape.nests || isScalar(value);
    case 'json':
      return true;
  }
}

/** What a new value of this shape starts as: an object gets its required fields, blank. */
export function blankOf(shape: Shape): unknown {
  switch (shape.kind) {
    case 'checkbox':
      return shape.default === true;
    case 'choice':
      return shape.default ?? shape.options[0];
    case 'fields':
      return Object.fromEntries(
        shape.fields.filter((f) => f.required).map((f) => [f.name, blankOf(shapeOf(f.schema))]),
      );
    case 'pairs':
      return {};
    case 'list':
      return [];
    default:
      return '';
  }
}

/** A value of no declared type as it starts in a mode the person picks. */
export const blankOfMode = (mode: Mode): unknown => (mode === 'fields' ? {} : mode === 'list' ? [] : '');

/** A scalar as its text box shows it. */
export function shownText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : String(value);
}

const numberText = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
/** "12" and "-0.5" but not "007" or "1.50": text that a number would be written as, so nothing typed is changed. */
const plainNumber = (t: string) => numberText.test(t) && String(Number(t)) === t;

/**
 * What is typed into a text box, as the value kept: a number where the schema takes numbers, true or false where it
 * takes booleans, text otherwise (templates included: {{amount}} is filled in, then read as a number, when the tool
 * runs). Where text is taken too, only what reads exactly as a number or a boolean becomes one, so "007" stays text.
 * `types` empty: no declared type (a body's field). An optional value left empty is left out (undefined).
 */
export function readText(typed: string, types: Scalar[], optional = false): unknown {
  const t = typed.trim();
  const text = types.length === 0 || types.includes('string');
  if (t === '') {
    if (optional) return undefined;
    return text ? '' : types.includes('null') ? null : '';
  }
  const numbers = types.length === 0 || types.includes('number') || types.includes('integer');
  if (numbers && (text ? plainNumber(t) : numberText.test(t))) return Number(t);
  const booleans = types.length === 0 || types.includes('boolean');
  if (booleans && (text ? t === 'true' || t === 'false' : /^(true|false)$/i.test(t))) return t.toLowerCase() === 'true';
  if (types.includes('null') && !text && t === 'null') return null;
  return typed;
}

/** Why what is typed will not do, in words; '' when it will (a template is filled in when the tool runs). */
export function textProblem(typed: string, types: Scalar[]): string {
  const t = typed.trim();
  if (t === '' || types.length === 0 || types.includes('string') || t.includes('{{')) return '';
  const numbers = types.includes('number') || types.includes('integer');
  if (numbers && !numberText.test(t)) return 'Give a number, or {{field}} for a value of the item.';
  if (!numbers && types.includes('boolean') && !/^(true|false)$/i.test(t))
    return 'Give true or false, or {{field}} for a value of the item.';
  return '';
}

/** The option a select's text stands for (enum values may be numbers). */
export function readChoice(selected: string, options: unknown[]): unknown {
  if (selected === '') return undefined;
  return options.find((o) => String(o) === selected) ?? selected;
}

/** An object's properties as name → value rows. */
export const pairsOf = (value: unknown): [string, unknown][] => (isRecord(value) ? Object.entries(value) : []);

/** Rows as the object kept: rows still without a name are left out until they get one. */
export const objectOf = (rows: [string, unknown][]): Record<string, unknown> =>
  Object.fromEntries(rows.filter(([k]) => k.trim() !== ''));

/** Names given to more than one row (only the last one's value is kept). */
export function duplicateNames(rows: [string, unknown][]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const [k] of rows) {
    if (k.trim() === '') continue;
    if (seen.has(k)) twice.add(k);
    seen.add(k);
  }
  return [...twice];
}

/** What a widget holds, in a few words, for the list of a tool's arguments: "list of text", "fields", "any value". */
export function shapeWords(schema: JsonSchema | undefined): string {
  const shape = shapeOf(schema);
  switch (shape.kind) {
    case 'text':
      return shape.types
        .filter((t) => t !== 'null')
        .map((t) => (t === 'string' ? 'text' : t === 'boolean' ? 'yes or no' : 'number'))
        .filter((w, i, all) => all.indexOf(w) === i)
        .join(' or ');
    case 'checkbox':
      return 'yes or no';
    case 'choice':
      return `one of ${shape.options.map(String).join(', ')}`;
    case 'fields':
      return `fields: ${shape.fields.map((f) => f.name).join(', ')}`;
    case 'pairs':
      return 'names and values';
    case 'list': {
      const item = shapeWords(shape.item);
      return shape.single ? `${item}, or a list of them` : `list of ${item}`;
    }
    case 'any':
      return 'any value';
    case 'json':
      return 'JSON';
  }
}
