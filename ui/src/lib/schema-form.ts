// A connector's settings form, drawn from the JSON Schema of its settings and credentials (GET /v1/connectors): one
// field per property, nested objects (a mailbox's IMAP and SMTP servers) as groups, so a new connector needs no form
// of its own. Field names are `config.<path>` and `credentials.<path>`; what is typed is read back the same way.

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  format?: string;
  description?: string;
  default?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
};

export type FieldInput = 'text' | 'url' | 'number' | 'checkbox' | 'select' | 'lines' | 'json' | 'secret' | 'account';

export interface SchemaField {
  /** `config.imap.host`, `credentials.password`: the form field's name. */
  name: string;
  /** Where the value goes in the settings object: ['imap', 'host']. */
  path: string[];
  label: string;
  help?: string;
  input: FieldInput;
  options?: string[];
  required: boolean;
  default?: unknown;
  min?: number;
  max?: number;
}

export interface FieldGroup {
  /** Undefined for the top level. */
  title?: string;
  help?: string;
  fields: SchemaField[];
}

/** `access_key_id` → "Access key id"; a few words people write in capitals. */
export function labelOf(key: string): string {
  const words = key.split('_').map((w) => (/^(url|id|ssl|tls|imap|smtp|api|s3)$/i.test(w) ? w.toUpperCase() : w));
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A property's schema without the `null` of an optional one (`anyOf: [X, {type: 'null'}]`). */
function unwrap(schema: JsonSchema): JsonSchema {
  const options = schema.anyOf ?? schema.oneOf;
  if (!options) return schema;
  const real = options.filter((o) => o.type !== 'null');
  return real.length === 1 ? { ...real[0], description: schema.description ?? real[0].description } : schema;
}

function inputOf(key: string, schema: JsonSchema, secret: boolean): Pick<SchemaField, 'input' | 'options'> {
  if (schema.enum) return { input: 'select', options: schema.enum.map(String) };
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (type === 'boolean') return { input: 'checkbox' };
  if (type === 'number' || type === 'integer') return { input: 'number' };
  if (type === 'array' && unwrap(schema.items ?? {}).type === 'string') return { input: 'lines' };
  if (type === 'string') {
    if (secret) return { input: 'secret' };
    // The oauth2 connection of the workspace a connector acts through.
    if (key === 'account') return { input: 'account' };
    return { input: schema.format === 'uri' ? 'url' : 'text' };
  }
  return { input: 'json' };
}

/** The groups of fields of a settings (or, with `secret`, credentials) schema, under the form name `root`. */
export function fieldGroups(schema: JsonSchema, root: 'config' | 'credentials' | 'options'): FieldGroup[] {
  const secret = root === 'credentials';
  const top: FieldGroup = { fields: [] };
  const groups: FieldGroup[] = [top];
  const visit = (s: JsonSchema, path: string[], group: FieldGroup) => {
    const required = new Set(s.required ?? []);
    for (const [key, raw] of Object.entries(s.properties ?? {})) {
      const prop = unwrap(raw);
      if (prop.type === 'object' && prop.properties && path.length === 0) {
        const nested: FieldGroup = { title: labelOf(key), help: prop.description, fields: [] };
        groups.push(nested);
        visit(prop, [key], nested);
        continue;
      }
      group.fields.push({
        name: [root, ...path, key].join('.'),
        path: [...path, key],
        label: labelOf(key),
        help: prop.description,
        ...inputOf(key, prop, secret),
        // A secret is asked for only when the settings need it; a field with a default is never required.
        required: required.has(key) && prop.default === undefined && path.length === 0,
        default: prop.default,
        min: prop.minimum,
        max: prop.maximum,
      });
    }
  };
  visit(schema, [], top);
  return groups.filter((g) => g.fields.length > 0);
}

/** The value a field shows for saved settings (never a secret: credentials are not answered). */
export function shownValue(settings: Record<string, unknown> | undefined, field: SchemaField): string | boolean {
  let value: unknown = settings;
  for (const key of field.path) value = (value as Record<string, unknown> | undefined)?.[key];
  value ??= field.default;
  if (field.input === 'checkbox') return value === true;
  if (value === undefined || value === null) return '';
  if (field.input === 'lines') return Array.isArray(value) ? value.join('\n') : String(value);
  if (field.input === 'json') return JSON.stringify(value, null, 2);
  return String(value);
}

export class FieldValueError extends Error {}

/**
 * What a form holds for these fields, as the API takes it: blank fields left out (the connector's defaults, or what
 * is saved when editing), numbers as numbers, one list item a line, JSON parsed.
 */
export function readFields(form: FormData, groups: FieldGroup[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // A group (an optional SMTP server) left blank but for its checkboxes is left out as a whole.
  const blankGroups = new Set(groups.filter((g) => g.title !== undefined).map((g) => g.fields[0].path[0]));
  for (const field of groups.flatMap((g) => g.fields)) {
    const raw = form.get(field.name);
    let value: unknown;
    if (field.input === 'checkbox') value = raw === 'on';
    else if (typeof raw !== 'string' || (field.input === 'secret' ? raw === '' : raw.trim() === '')) continue;
    else if (field.input === 'secret')
      value = raw; // spaces may be part of it
    else if (field.input === 'number') {
      value = Number(raw.trim());
      if (!Number.isFinite(value)) throw new FieldValueError(`${field.label}: give a number`);
    } else if (field.input === 'lines')
      value = raw
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
    else if (field.input === 'json') {
      try {
        value = JSON.parse(raw);
      } catch {
        throw new FieldValueError(`${field.label}: give valid JSON`);
      }
    } else value = raw.trim();
    if (field.input !== 'checkbox') blankGroups.delete(field.path[0]);
    let at = out;
    for (const key of field.path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[field.path[field.path.length - 1]] = value;
  }
  for (const key of blankGroups) delete out[key];
  return out;
}

/** What goes back to a refused form: the settings typed, never the credentials. */
export function echoOf(form: FormData, groups: FieldGroup[]): Record<string, unknown> {
  try {
    return readFields(form, groups);
  } catch {
    return {};
  }
}
