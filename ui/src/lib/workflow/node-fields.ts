// The form of each node kind, drawn from the agent spec's own zod schema (model/agent.ts) as Integrations draws a
// connector's settings from its JSON Schema: one field per property. The properties that shape the graph or need a
// richer control (exits, conditions, a tool and its arguments, an output schema, the agent called) have their own
// widgets.
import { z } from 'zod';
import { nodeSchema } from '../../../../model/agent';
import { fieldGroups, type SchemaField } from '$lib/schema-form';

/** Drawn by widgets of their own, not as plain fields. */
export const WIDGET_KEYS = new Set([
  'id',
  'kind',
  'next',
  'otherwise',
  'branches',
  'when',
  'set',
  'rename',
  'cast',
  'tool',
  'arguments',
  'tools',
  'output_schema',
  'agent_id',
]);

/** Fields that hold sentences, not a word. */
export const LONG_KEYS = new Set(['instructions', 'message', 'reason', 'query', 'input']);

/**
 * What each field is for, in plain words (the schema carries types, not explanations); "kind.field" when a field
 * means something else in one kind of node. See helpOf.
 */
export const FIELD_HELP: Record<string, string> = {
  format: 'The file the items are collected into: json, csv, xlsx (a spreadsheet) or markdown (a table).',
  'input.format':
    'How the run’s input is split into items: csv or tsv (one item a row, the first row names the fields), lines (one item a line), json (one item an entry of a list), files (one item a file), auto (tries json, then csv, then lines).',
  instructions: 'What the model does with each item, in plain English. {{field}} puts in an item’s value.',
  message: 'What the approver reads. {{field}} puts in an item’s value.',
  reason: 'What the reviewer reads. {{field}} puts in an item’s value.',
  save_as: 'The item field that receives the result.',
  drop: 'Fields removed from each item, one a line.',
  fields: 'The columns of the file, one a line; all fields when empty.',
  file_name: 'A plain file name, such as report.csv.',
  query: 'What to search the agent’s sources for. {{field}} puts in an item’s value.',
  sources: 'Sources to search, one a line; all of the agent’s when empty.',
  top_k: 'How many passages to find.',
  input: 'What the other agent is given; {{$item}} is the whole item.',
  wait: 'Wait for the other agent’s run to finish before going on.',
};

const jsonSchemas = Object.fromEntries(
  nodeSchema.options.map((option) => [
    option.shape.kind.value,
    z.toJSONSchema(option, { io: 'input', unrepresentable: 'any' }),
  ]),
);
const schemas: Record<string, SchemaField[]> = Object.fromEntries(
  Object.entries(jsonSchemas).map(([kind, json]) => {
    const fields = fieldGroups(json as Parameters<typeof fieldGroups>[0], 'options').flatMap((g) => g.fields);
    return [kind, fields.filter((f) => !WIDGET_KEYS.has(f.path[0]))];
  }),
);

/** The JSON Schema of one property of a node kind (a transform's `set`), for the widgets drawn from schemas. */
export const propertySchemaOf = (kind: string, key: string): Record<string, unknown> | undefined =>
  (jsonSchemas[kind] as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties?.[key];

/** The plain fields of a node kind, in the schema's order. */
export const plainFieldsOf = (kind: string): SchemaField[] => schemas[kind] ?? [];

/** A field's value as its control shows it. */
export function shownOf(field: SchemaField, raw: unknown): string | boolean {
  const value = raw ?? field.default;
  if (field.input === 'checkbox') return value === true;
  if (value === undefined || value === null) return '';
  if (field.input === 'lines') return Array.isArray(value) ? value.join('\n') : String(value);
  if (field.input === 'json') return JSON.stringify(value, null, 2);
  return String(value);
}

/** What a control holds, as the node stores it; undefined leaves the property out (its default applies). */
export function storedOf(field: SchemaField, typed: string | boolean): unknown {
  if (field.input === 'checkbox') return typed === true;
  const text = String(typed);
  if (text.trim() === '') return field.required ? '' : undefined;
  if (field.input === 'number') return Number.isNaN(Number(text)) ? text : Number(text);
  if (field.input === 'lines')
    return text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  if (field.input === 'json') return JSON.parse(text);
  return text;
}

/** The help shown under a node's field: its kind's own words, else the field's. */
export const helpOf = (kind: string, key: string): string | undefined =>
  FIELD_HELP[`${kind}.${key}`] ?? FIELD_HELP[key];
