// Values generated from the JSON Schemas of an OpenAPI document (2020-12, as api/openapi.ts writes them), the way a
// property-based API tester (Schemathesis, say) makes them: values the schema accepts, from the smallest to the
// largest it allows and the awkward ones in between (blank text, text at its longest, non-ASCII, bounds), and
// values it refuses, each breaking exactly one of its rules. A seeded random source makes every run the same.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- schemas and values are walked generically
export type Json = any;

/** A seeded generator (a linear congruential one): the same seed gives the same requests. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * How a valid value is chosen: `min` the smallest the schema allows (required properties only, shortest text,
 * lowest numbers), `max` the largest (every property, longest text, highest numbers), `edge` awkward values the
 * schema still allows (blank and non-ASCII text, bounds), `random` anything in between.
 */
export type Mode = 'min' | 'max' | 'edge' | 'random';

/** Text long enough to probe a limit, short enough to stay far under the API's body limit. */
const longest = 5_000;

/** Plain values that common patterns accept (times, domains, names, codes, cron lines). */
const patternCandidates = [
  'sample',
  'a',
  'A',
  'x1',
  '09:30',
  '123456',
  'example.com',
  'sample_1',
  'sample-name',
  '0 9 * * 1',
  'US-East_1',
  'Sample Name',
];

export class SchemaSampler {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<unknown, ValidateFunction>();

  constructor(
    private readonly doc: Json,
    private readonly random: () => number,
  ) {
    this.ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
    this.ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
  }

  /** Whether the document's schema accepts the value (formats are the generator's to respect). */
  accepts(schema: Json, value: unknown): boolean {
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')));
      this.compiled.set(schema, validate);
    }
    return validate(value);
  }

  resolve(schema: Json): Json {
    if (!schema?.$ref) return schema ?? {};
    const target = schema.$ref
      .split('/')
      .slice(1)
      .reduce((o: Json, k: string) => o[k], this.doc);
    return this.resolve(target);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.random() * xs.length)];
  }

  private typeOf(schema: Json): string | undefined {
    if (Array.isArray(schema.type)) {
      const types = schema.type.filter((t: string) => t !== 'null');
      return types.length ? this.pick(types) : 'null';
    }
    if (schema.type) return schema.type;
    if (schema.properties || schema.additionalProperties) return 'object';
    if (schema.items) return 'array';
    if (schema.minLength !== undefined || schema.maxLength !== undefined || schema.pattern || schema.format)
      return 'string';
    return undefined;
  }

  /** A value the schema accepts, or undefined when none was found in a few tries. */
  valid(schema: Json, mode: Mode): unknown {
    for (let attempt = 0; attempt < 6; attempt++) {
      const value = this.sample(schema, attempt < 3 ? mode : 'random', 0);
      if (this.accepts(schema, value)) return value;
    }
    return undefined;
  }

  private sample(schema: Json, mode: Mode, depth: number): Json {
    schema = this.resolve(schema);
    if (schema.const !== undefined) return schema.const;
    if (schema.enum) return mode === 'min' ? schema.enum[0] : this.pick(schema.enum);
    if (schema.default !== undefined && mode === 'random' && this.random() < 0.2) return schema.default;
    const branches = schema.oneOf ?? schema.anyOf;
    if (branches) {
      const { oneOf: _o, anyOf: _a, ...rest } = schema;
      const branch = this.resolve(this.pick(branches));
      return this.sample({ ...rest, ...branch }, mode, depth + 1);
    }
    if (schema.allOf) {
      const merged = schema.allOf.reduce((a: Json, s: Json) => ({ ...a, ...this.resolve(s) }), {});
      const { allOf: _all, ...rest } = schema;
      return this.sample({ ...rest, ...merged }, mode, depth + 1);
    }
    switch (this.typeOf(schema)) {
      case 'null':
        return null;
      case 'object':
        return this.object(schema, mode, depth);
      case 'array': {
        const min = schema.minItems ?? 0;
        const max = Math.min(schema.maxItems ?? min + 3, min + 8);
        const n =
          mode === 'min'
            ? min
            : mode === 'max'
              ? max
              : min + Math.floor(this.random() * (Math.min(max, min + 3) - min + 1));
        return Array.from({ length: depth > 4 ? min : n }, () => this.sample(schema.items ?? {}, mode, depth + 1));
      }
      case 'integer':
      case 'number':
        return this.number(schema, mode);
      case 'boolean':
        return mode === 'min' ? false : mode === 'max' ? true : this.random() < 0.5;
      case 'string':
        return this.string(schema, mode);
      default:
        // Anything (`{}`): a little of everything.
        return mode === 'min' ? null : this.pick([{ note: 'free-form' }, 'text', 1, true, [1, 'two'], null]);
    }
  }

  private object(schema: Json, mode: Mode, depth: number): Json {
    const out: Json = {};
    const required: string[] = schema.required ?? [];
    for (const [name, prop] of Object.entries<Json>(schema.properties ?? {})) {
      const wanted =
        required.includes(name) ||
        mode === 'max' ||
        (mode !== 'min' && depth < 4 && this.random() < (mode === 'edge' ? 0.8 : 0.5));
      if (wanted) out[name] = this.sample(prop, mode, depth + 1);
    }
    // A map (a record): a key or two of its own.
    if (typeof schema.additionalProperties === 'object' && mode !== 'min' && depth < 4) {
      const key = mode === 'edge' ? 'ключ key' : 'extra_key';
      out[key] = this.sample(schema.additionalProperties, mode, depth + 1);
    }
    return out;
  }

  private number(schema: Json, mode: Mode): number {
    const integer = schema.type === 'integer';
    const lowest =
      schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + (integer ? 1 : 0.5) : 0);
    const highest =
      schema.maximum ??
      (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - (integer ? 1 : 0.5) : lowest + 1_000_000);
    if (mode === 'min') return lowest;
    if (mode === 'max') return highest;
    if (mode === 'edge') return this.pick([lowest, highest, Math.min(highest, Math.max(lowest, 0))]);
    const n = lowest + this.random() * Math.min(highest - lowest, 1_000);
    return integer ? Math.floor(n) : Math.round(n * 100) / 100;
  }

  private string(schema: Json, mode: Mode): string {
    const min: number = schema.minLength ?? 0;
    const max: number = Math.min(schema.maxLength ?? longest, longest);
    switch (schema.format) {
      case 'email':
        return `p${Math.floor(this.random() * 1e6)}@example.test`;
      case 'uuid':
        return this.uuid();
      case 'date-time':
        return mode === 'min'
          ? '1970-01-01T00:00:00Z'
          : mode === 'max'
            ? '9999-12-31T23:59:59Z'
            : new Date().toISOString();
      case 'date':
        return '2026-01-01';
      case 'uri':
      case 'url':
        return 'https://127.0.0.1/x'; // what is connected to stays on this machine
      case 'hostname':
        return '127.0.0.1';
      default:
    }
    const fits = (s: string) =>
      s.length >= min && s.length <= max && (!schema.pattern || new RegExp(schema.pattern, 'u').test(s));
    const candidates: string[] = [];
    if (mode === 'min') candidates.push('a'.repeat(min), 'sample'.slice(0, Math.max(min, 1)));
    if (mode === 'max') candidates.push('x'.repeat(max), 'Sample text '.repeat(max).slice(0, max));
    if (mode === 'edge')
      candidates.push(
        ...this.shuffle([
          ' '.repeat(Math.max(min, 1)),
          'é'.repeat(Math.max(min, 1)),
          '\u0000',
          `${'z'.repeat(max - 1)} `,
        ]),
      );
    candidates.push(('sample value ' + Math.floor(this.random() * 1000)).padEnd(min, 'x').slice(0, max));
    for (const c of candidates) if (fits(c)) return c;
    for (const c of patternCandidates) if (fits(c)) return c;
    for (const c of patternCandidates) if (fits(c.padEnd(min, 'x'))) return c.padEnd(min, 'x');
    return 'sample';
  }

  /** True with probability p, from the seeded source. */
  chance(p: number): boolean {
    return this.random() < p;
  }

  /** A version 4 UUID from the seeded source. */
  uuid(): string {
    const hex = Array.from({ length: 32 }, () => Math.floor(this.random() * 16).toString(16)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
  }

  private shuffle<T>(xs: T[]): T[] {
    return xs
      .map((x) => [this.random(), x] as const)
      .sort((a, b) => a[0] - b[0])
      .map(([, x]) => x);
  }

  /**
   * The valid value with one rule of the schema broken somewhere inside it (a required property dropped, text too
   * long or too short, a number out of range, a value outside an enum, the wrong type), described; undefined when
   * the schema leaves nothing to break. The caller checks that the document refuses the result.
   */
  breakOne(schema: Json, value: unknown): { value: unknown; how: string } | undefined {
    const spots: { path: (string | number)[]; schema: Json }[] = [];
    const walk = (s: Json, v: Json, path: (string | number)[]) => {
      s = this.resolve(s);
      if (s.oneOf || s.anyOf) return; // which branch the value is is not this walk's to say
      spots.push({ path, schema: s });
      if (v && typeof v === 'object' && !Array.isArray(v) && s.properties)
        for (const [k, sub] of Object.entries<Json>(s.properties)) if (k in v) walk(sub, v[k], [...path, k]);
      if (Array.isArray(v) && s.items) v.forEach((item, i) => walk(s.items, item, [...path, i]));
    };
    walk(schema, value, []);
    const options: { path: (string | number)[]; replace?: unknown; drop?: string; how: string }[] = [];
    for (const { path, schema: s } of spots) {
      const at = path.join('.') || 'the body';
      const type = this.typeOf(s);
      if (s.required?.length) {
        const name = this.pick(s.required as string[]);
        options.push({ path, drop: name, how: `${at}: required ${name} left out` });
      }
      if (s.additionalProperties === false)
        options.push({ path: [...path, 'unexpected_property'], replace: 1, how: `${at}: an unknown property` });
      if (s.enum) options.push({ path, replace: 'not-one-of-them', how: `${at}: outside its enum` });
      if (type === 'string') {
        options.push({ path, replace: 12345, how: `${at}: a number for a string` });
        if (s.maxLength !== undefined && s.maxLength < 60_000)
          options.push({ path, replace: 'y'.repeat(s.maxLength + 1), how: `${at}: longer than ${s.maxLength}` });
        if (s.minLength)
          options.push({ path, replace: 'y'.repeat(s.minLength - 1), how: `${at}: shorter than ${s.minLength}` });
        if (s.pattern && !new RegExp(s.pattern, 'u').test('~ not it ~'))
          options.push({ path, replace: '~ not it ~', how: `${at}: not matching ${s.pattern}` });
      }
      if (type === 'integer' || type === 'number') {
        options.push({ path, replace: 'seven', how: `${at}: text for a number` });
        if (type === 'integer') options.push({ path, replace: 1.5, how: `${at}: a fraction for an integer` });
        if (s.maximum !== undefined) options.push({ path, replace: s.maximum + 1, how: `${at}: over ${s.maximum}` });
        if (s.minimum !== undefined) options.push({ path, replace: s.minimum - 1, how: `${at}: under ${s.minimum}` });
      }
      if (type === 'boolean') options.push({ path, replace: 'yes', how: `${at}: text for a boolean` });
      if (type === 'array') {
        options.push({ path, replace: { not: 'a list' }, how: `${at}: an object for an array` });
        if (s.maxItems !== undefined && s.maxItems < 100)
          options.push({
            path,
            replace: Array.from({ length: s.maxItems + 1 }, () => this.sample(s.items ?? {}, 'min', 5)),
            how: `${at}: more than ${s.maxItems} items`,
          });
        if (s.minItems) options.push({ path, replace: [], how: `${at}: fewer than ${s.minItems} items` });
      }
      if (type === 'object' && s.properties)
        options.push({ path, replace: ['not', 'an', 'object'], how: `${at}: an array for an object` });
    }
    for (const option of this.shuffle(options)) {
      const broken = structuredClone(value) as Json;
      if (option.drop !== undefined) {
        const target = option.path.reduce((o: Json, k) => o?.[k], broken);
        if (!target || typeof target !== 'object') continue;
        delete target[option.drop];
      } else if (option.path.length === 0) {
        if (!this.accepts(schema, option.replace)) return { value: option.replace, how: option.how };
        continue;
      } else {
        const parent = option.path.slice(0, -1).reduce((o: Json, k) => o?.[k], broken);
        if (!parent || typeof parent !== 'object') continue;
        parent[option.path[option.path.length - 1]] = option.replace;
      }
      if (!this.accepts(schema, broken)) return { value: broken, how: option.how };
    }
    return undefined;
  }
}

/** Every string in the value, object keys too, changed. */
export function mapStrings(value: unknown, change: (s: string) => string): unknown {
  if (typeof value === 'string') return change(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, change));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [change(k), mapStrings(v, change)]));
  return value;
}

/** Every number in the value replaced. */
export function mapNumbers(value: unknown, change: (n: number) => unknown): unknown {
  if (typeof value === 'number') return change(value);
  if (Array.isArray(value)) return value.map((v) => mapNumbers(v, change));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapNumbers(v, change)]));
  return value;
}

/** JSON text nested `depth` levels deep (built as text: a value that deep would overflow a recursive stringify). */
export function deepJson(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}
