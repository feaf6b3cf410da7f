// A change between two versions as a person reads it: "nodes[2].branches[0].when.value" is "Node 'route' → Branch
// 1, condition 1: value", in the words the editor's forms use (problems.ts), not the path into the JSON.
import type { Condition } from '$lib/api-types';
import { fieldText, isRecord } from '$lib/format';
import { COMPARISONS, takesValue } from './conditions';
import { where } from './problems';

/** Settings that hold the person's own names (a tool's arguments, a transform's fields). */
const DATA_KEYS = new Set(['arguments', 'set', 'rename', 'cast']);

/** The path's parts: `nodes[2].next` → ['nodes', 2, 'next']. */
function partsOf(path: string): PropertyKey[] {
  return [...path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]));
}

/**
 * `nodeId(i)` names the node at index i (in the version compared to, else the one compared from), so a change is
 * shown on the node a person knows by name.
 */
export function changeWords(path: string, nodeId: (index: number) => string | undefined): string {
  const [top, index, ...rest] = partsOf(path);
  if (top === 'nodes' && typeof index === 'number') {
    const node = `Node '${nodeId(index) ?? `number ${index + 1}`}'`;
    if (rest.length === 0) return node;
    // Inside a tool's arguments or a transform's fields the names are the person's own (a body's "id" is not the
    // node's name on the canvas): said as they are, after the editor's word for the setting.
    if (typeof rest[0] === 'string' && DATA_KEYS.has(rest[0]) && rest.length > 1) {
      const inner = rest.slice(1).map((k) => (typeof k === 'number' ? `entry ${k + 1}` : String(k)));
      return `${node} → ${where([rest[0]]).field}: ${inner.join(' → ')}`;
    }
    const { place, field } = where(rest);
    return `${node} → ${[place, field].filter(Boolean).join(': ')}`;
  }
  const { place, field } = where(partsOf(path));
  return [place, field].filter(Boolean).join(': ') || path;
}

const comparison = (op: unknown) => COMPARISONS.find((c) => c.op === op)?.label ?? String(op);
const isCondition = (v: unknown): v is Condition => isRecord(v) && typeof v.field === 'string' && 'op' in v;
const conditionWords = (c: Condition) =>
  `${c.field} ${comparison(c.op)}${takesValue(c.op) ? ` ${fieldText(c.value)}` : ''}`;
const joined = (list: unknown, join: 'and' | 'or') =>
  Array.isArray(list) && list.every(isCondition) ? list.map(conditionWords).join(` ${join} `) : null;

/**
 * A changed value in the words the editor's condition rows use ("amount is more than 1000", "is more than"), or null
 * when it is not a condition: the page then shows it as named values (DataFields), never as JSON.
 */
export function conditionValueWords(path: string, value: unknown): string | null {
  const last = partsOf(path).at(-1);
  if (last === 'op' && typeof value === 'string') return comparison(value);
  if (isCondition(value)) return conditionWords(value);
  if (isRecord(value) && Object.keys(value).length === 1) {
    if ('all' in value) return joined(value.all, 'and');
    if ('any' in value) return joined(value.any, 'or');
  }
  if (last === 'all' || last === 'any') return joined(value, last === 'all' ? 'and' : 'or');
  return null;
}
