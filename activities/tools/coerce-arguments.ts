// Tool arguments as people give them, fitted to the tool's JSON Schema before it is checked. A CSV column, or a
// template with text around its value, gives "7" where an operation's parameter is an integer: a value that is an
// unambiguous rendering of the type the schema asks for becomes that type, through objects and arrays as the schema
// describes them; any other value that does not fit is refused naming the argument, the value and the type.
//
// Strict on purpose, unlike Ajv's coerceTypes (which turns "" into 0 or false, and a scalar into a one-item array):
// - integer: a number written in full ("7", "-3", " 42 ", "1e3"), whose value is a whole number; "7.5" is not one;
// - number: a number written in full ("7.5", "-0.25", "1e-3"); "", "NaN", "0x10", "1,5" are not;
// - boolean: "true" or "false" (any case); not "1", "yes" or "";
// - null (only where the schema allows null): "" or "null";
// - array or object: its JSON text ('[1, 2]', '{"a": 1}'), then fitted in turn;
// - string: a finite number, as its decimal text (a JSON input's 12345 for a string parameter).
// An empty text for an optional property whose schema takes neither text nor null is left out, as an empty CSV cell
// means the value was not given. A value the schema's type already accepts is kept as it is (a string parameter
// keeps "007"). Schemas without a type (or a type the walk does not know) leave the value to the validator.

type Schema = Record<string, unknown>;

/** A value that is not, and cannot be read as, the type its schema asks for. */
export class ArgumentTypeError extends Error {}

const numberText = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const maxRefHops = 32;
const none = Symbol('none');

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The types a schema names (`type`, OpenAPI 3.0's `nullable`, or its `enum`/`const` values'); undefined: any. */
function typesOf(schema: Schema): Set<string> | undefined {
  let types: string[] | undefined;
  if (typeof schema.type === 'string') types = [schema.type];
  else if (Array.isArray(schema.type)) types = schema.type.map(String);
  else if (Array.isArray(schema.enum) || 'const' in schema)
    types = (Array.isArray(schema.enum) ? schema.enum : [schema.const]).map(typeOfValue);
  if (!types) return undefined;
  if (schema.nullable === true) types.push('null');
  return new Set(types);
}

function typeOfValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function fits(value: unknown, types: Set<string> | undefined): boolean {
  if (!types) return true;
  const t = typeOfValue(value);
  return types.has(t) || (t === 'integer' && types.has('number'));
}

const named: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  null: 'null',
  string: 'a string',
  array: 'an array',
  object: 'an object',
};

/** The value the text is a rendering of, of one of `types`; `none` when it is none of them. */
function fromText(text: string, types: Set<string>): unknown {
  const t = text.trim();
  if ((types.has('integer') || types.has('number')) && numberText.test(t)) {
    const n = Number(t);
    if (types.has('number') ? Number.isFinite(n) : Number.isSafeInteger(n)) return n;
  }
  if (types.has('boolean') && /^(true|false)$/i.test(t)) return t.toLowerCase() === 'true';
  if (types.has('null') && (t === '' || t.toLowerCase() === 'null')) return null;
  if ((types.has('array') && t.startsWith('[')) || (types.has('object') && t.startsWith('{'))) {
    try {
      const parsed: unknown = JSON.parse(t);
      if (fits(parsed, types)) return parsed;
    } catch {
      // not JSON: not an array or object either
    }
  }
  return none;
}

class Walk {
  constructor(private readonly root: Schema) {}

  /** `#/$defs/X` and the like in the tool's own schema; anything else is not followed. */
  private deref(ref: string): Schema | undefined {
    if (ref === '#') return this.root;
    if (!ref.startsWith('#/')) return undefined;
    const target = ref
      .slice(2)
      .split('/')
      .map((p) => decodeURIComponent(p).replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((o, k) => (isObject(o) ? o[k] : undefined), this.root);
    return isObject(target) ? target : undefined;
  }

  value(value: unknown, schema: unknown, at: string, hops = 0): unknown {
    if (!isObject(schema) || value === undefined) return value;
    if (typeof schema.$ref === 'string' && hops < maxRefHops)
      value = this.value(value, this.deref(schema.$ref), at, hops + 1);
    if (Array.isArray(schema.allOf)) for (const sub of schema.allOf) value = this.value(value, sub, at, hops + 1);
    const types = typesOf(schema);
    const branches = schema.anyOf ?? schema.oneOf;
    if (Array.isArray(branches) && !types) return this.branch(value, branches, at, hops);
    if (fits(value, types)) return this.inside(value, schema, at);
    if (typeof value === 'string') {
      const read = fromText(value, types!);
      if (read !== none) return this.inside(read, schema, at);
    } else if (typeof value === 'number' && types!.has('string') && Number.isFinite(value)) return String(value);
    const shown = JSON.stringify(value) ?? String(value);
    throw new ArgumentTypeError(
      `argument "${at}": ${shown.length > 80 ? `${shown.slice(0, 80)}…` : shown} is not ${[...types!]
        .map((t) => named[t] ?? t)
        .join(' or ')}`,
    );
  }

  /** anyOf/oneOf: the first branch the value fits as it is, else the first it can be read as; else the validator's. */
  private branch(value: unknown, branches: unknown[], at: string, hops: number): unknown {
    const resolved = branches.map((b) => (isObject(b) && typeof b.$ref === 'string' ? (this.deref(b.$ref) ?? b) : b));
    const fitting = resolved.find((b) => isObject(b) && fits(value, typesOf(b)));
    if (fitting) return this.value(value, fitting, at, hops + 1);
    for (const b of resolved) {
      try {
        return this.value(value, b, at, hops + 1);
      } catch (err) {
        if (!(err instanceof ArgumentTypeError)) throw err;
      }
    }
    return value;
  }

  /** An object's properties and an array's items, each fitted to its own schema. */
  private inside(value: unknown, schema: Schema, at: string): unknown {
    if (Array.isArray(value)) {
      const tuple = Array.isArray(schema.prefixItems)
        ? schema.prefixItems
        : Array.isArray(schema.items)
          ? schema.items
          : undefined;
      const rest = tuple ? (Array.isArray(schema.items) ? schema.additionalItems : schema.items) : schema.items;
      return value.map((v, i) => this.value(v, tuple && i < tuple.length ? tuple[i] : rest, `${at}[${i}]`));
    }
    if (!isObject(value)) return value;
    const properties = isObject(schema.properties) ? schema.properties : {};
    const patterns = isObject(schema.patternProperties) ? Object.entries(schema.patternProperties) : [];
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const sub = Object.hasOwn(properties, key)
        ? properties[key]
        : (patterns.find(([p]) => safeTest(p, key))?.[1] ??
          (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined));
      try {
        // As an own property whatever its name ("__proto__" too), as the arguments had it.
        Object.defineProperty(out, key, {
          value: this.value(v, sub, at ? `${at}.${key}` : key),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } catch (err) {
        // An empty cell for an optional argument that takes no text: not given.
        if (err instanceof ArgumentTypeError && typeof v === 'string' && v.trim() === '' && !required.has(key))
          continue;
        throw err;
      }
    }
    return out;
  }
}

function safeTest(pattern: string, key: string): boolean {
  try {
    return new RegExp(pattern, 'u').test(key);
  } catch {
    return false;
  }
}

/** The arguments fitted to the tool's schema (a new object); throws ArgumentTypeError naming what does not fit. */
export function coerceArguments(args: Record<string, unknown>, schema: object): Record<string, unknown> {
  return new Walk(schema as Schema).value(args, schema, '') as Record<string, unknown>;
}
