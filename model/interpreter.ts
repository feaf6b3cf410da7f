// Pure functions that move one item through the set-based part of an agent's graph. The page activity runs
// them over a whole page in memory, so 1,000 items cost one database round trip, not 1,000 activities.
import type { AgentNode, Condition, Conditions } from './agent';

export type ItemData = Record<string, unknown>;

export function getPath(data: unknown, path: string): unknown {
  if (path === '$item') return data;
  let cur: unknown = data;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function setPath(data: ItemData, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur: Record<string, unknown> = data;
  for (const part of parts.slice(0, -1)) {
    if (cur[part] === null || typeof cur[part] !== 'object') cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]] = value;
}

function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v);
  return undefined;
}

function testCondition(c: Condition, data: unknown): boolean {
  const actual = getPath(data, c.field);
  switch (c.op) {
    case 'exists':
      return actual !== undefined && actual !== null && actual !== '';
    case 'not_exists':
      return actual === undefined || actual === null || actual === '';
    case 'equals':
      return String(actual) === String(c.value);
    case 'not_equals':
      return String(actual) !== String(c.value);
    case 'contains':
      return Array.isArray(actual)
        ? actual.some((v) => String(v) === String(c.value))
        : String(actual ?? '')
            .toLowerCase()
            .includes(String(c.value ?? '').toLowerCase());
    default: {
      const a = asNumber(actual);
      const b = asNumber(c.value);
      if (a === undefined || b === undefined) return false;
      return c.op === 'gt' ? a > b : c.op === 'gte' ? a >= b : c.op === 'lt' ? a < b : a <= b;
    }
  }
}

export function matches(conditions: Conditions, data: unknown): boolean {
  if ('all' in conditions) return conditions.all.every((c) => testCondition(c, data));
  if ('any' in conditions) return conditions.any.some((c) => testCondition(c, data));
  return testCondition(conditions, data);
}

const placeholder = /\{\{\s*([$\w.-]+)\s*\}\}/g;

/**
 * Fills `{{field}}` placeholders from item data. A string that is exactly one placeholder keeps the value's
 * type (so `"{{amount}}"` stays a number); objects and arrays are rendered recursively.
 */
export function render(template: unknown, data: unknown): unknown {
  if (typeof template === 'string') {
    const whole = /^\{\{\s*([$\w.-]+)\s*\}\}$/.exec(template);
    if (whole) return getPath(data, whole[1]);
    return template.replace(placeholder, (_, path: string) => {
      const v = getPath(data, path);
      if (v === undefined || v === null) return '';
      return typeof v === 'object' ? JSON.stringify(v) : String(v);
    });
  }
  if (Array.isArray(template)) return template.map((t) => render(t, data));
  if (template !== null && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, render(v, data)]));
  }
  return template;
}

export class ItemError extends Error {}

function cast(value: unknown, to: 'number' | 'string' | 'boolean', field: string): unknown {
  if (to === 'string') return value === undefined || value === null ? '' : String(value);
  if (to === 'boolean') return ['true', '1', 'yes', 'y'].includes(String(value).trim().toLowerCase());
  const n = asNumber(typeof value === 'string' ? value.replace(/[,\s]/g, '') : value);
  if (n === undefined) throw new ItemError(`field "${field}" is not a number: ${JSON.stringify(value)}`);
  return n;
}

export function applyTransform(node: Extract<AgentNode, { kind: 'transform' }>, data: ItemData): ItemData {
  const out: ItemData = structuredClone(data);
  for (const [from, to] of Object.entries(node.rename)) {
    if (from in out && from !== to) {
      out[to] = out[from];
      delete out[from];
    }
  }
  for (const [field, template] of Object.entries(node.set)) setPath(out, field, render(template, data));
  for (const [field, type] of Object.entries(node.cast)) setPath(out, field, cast(getPath(out, field), type, field));
  for (const field of node.drop) delete out[field];
  return out;
}

/** The node an item goes to after `node` (null: the item is finished). */
export function nextNodeId(node: AgentNode, data: ItemData): string | null {
  if (node.kind === 'branch') {
    const hit = node.branches.find((b) => matches(b.when, data));
    return (hit ? hit.next : node.otherwise) ?? null;
  }
  return node.next ?? null;
}

/** Stores a step's result on the item: under `saveAs`, or merged in when it is an object. */
export function saveResult(data: ItemData, saveAs: string | undefined, result: unknown): ItemData {
  if (saveAs) return { ...data, [saveAs]: result };
  if (result !== null && typeof result === 'object' && !Array.isArray(result))
    return { ...data, ...(result as ItemData) };
  return { ...data, result };
}
