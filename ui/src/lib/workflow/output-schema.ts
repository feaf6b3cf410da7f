// An llm step's output schema (JSON Schema) as rows a person edits: a field's name, type, description and whether the
// model must give it, with an object's own fields and an array's item type (and, for objects, their fields) nested.
// Only what these rows can say is drawn as rows; a schema that says more (enums, bounds, anyOf…) stays in the
// Advanced JSON, so the form never drops a rule it cannot show.

export const FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
/** What an array's items may be in the rows: no arrays of arrays. */
export const ITEM_TYPES = ['string', 'number', 'integer', 'boolean', 'object'] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

export interface SchemaRow {
  name: string;
  type: FieldType;
  description: string;
  required: boolean;
  /** An array's item type. */
  items: ItemType;
  /** An object's fields, or the fields of an array's object items. */
  fields: SchemaRow[];
}

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const onlyKeys = (o: Json, allowed: string[]) => Object.keys(o).every((k) => allowed.includes(k));

export const emptyRow = (): SchemaRow => ({
  name: '',
  type: 'string',
  description: '',
  required: true,
  items: 'string',
  fields: [],
});

/** An object schema's properties as rows, or null when it says something rows cannot. */
function objectRows(o: Json): SchemaRow[] | null {
  if (o.type !== 'object' || !isRecord(o.properties ?? {})) return null;
  const properties = (o.properties ?? {}) as Json;
  const required = o.required ?? [];
  if (!Array.isArray(required) || !required.every((r) => typeof r === 'string' && r in properties)) return null;
  const rows: SchemaRow[] = [];
  for (const [name, p] of Object.entries(properties)) {
    const row = propertyRow(name, p, required.includes(name));
    if (!row) return null;
    rows.push(row);
  }
  return rows;
}

function propertyRow(name: string, p: unknown, required: boolean): SchemaRow | null {
  if (!isRecord(p) || !onlyKeys(p, ['type', 'description', 'properties', 'required', 'items'])) return null;
  if (!FIELD_TYPES.includes(p.type as FieldType)) return null;
  if (p.description !== undefined && typeof p.description !== 'string') return null;
  const row: SchemaRow = { ...emptyRow(), name, type: p.type as FieldType, description: p.description ?? '', required };
  if (row.type === 'object') {
    const fields = objectRows(p);
    if (!fields) return null;
    return { ...row, fields };
  }
  if (row.type === 'array') {
    if (!isRecord(p.items) || p.properties !== undefined || p.required !== undefined) return null;
    const item = propertyRow('', p.items, false);
    if (!item || item.type === 'array' || item.description) return null;
    return { ...row, items: item.type as ItemType, fields: item.fields };
  }
  return p.properties === undefined && p.required === undefined && p.items === undefined ? row : null;
}

/** The schema's fields as rows: [] for none, null when only the Advanced JSON can show it whole. */
export function rowsOf(schema: unknown): SchemaRow[] | null {
  if (schema === undefined || schema === null) return [];
  if (!isRecord(schema) || !onlyKeys(schema, ['type', 'properties', 'required'])) return null;
  return objectRows(schema);
}

function objectSchema(rows: SchemaRow[]): Json {
  const named = rows.filter((r) => r.name !== '');
  const required = named.filter((r) => r.required).map((r) => r.name);
  return {
    type: 'object',
    properties: Object.fromEntries(named.map((r) => [r.name, propertySchema(r)])),
    ...(required.length ? { required } : {}),
  };
}

function propertySchema(row: SchemaRow): Json {
  const described = row.description ? { description: row.description } : {};
  if (row.type === 'object') return { ...objectSchema(row.fields), ...described };
  if (row.type === 'array') {
    const items = row.items === 'object' ? objectSchema(row.fields) : { type: row.items };
    return { type: 'array', ...described, items };
  }
  return { type: row.type, ...described };
}

/** The rows as the node stores them; no fields leaves the schema out. A row still without a name is left out. */
export function schemaOf(rows: SchemaRow[]): Json | undefined {
  return rows.some((r) => r.name !== '') ? objectSchema(rows) : undefined;
}
