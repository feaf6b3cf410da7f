// Reading an agent's node graph for display. Mirrors `successors` in model/agent.ts, but stays tolerant
// of fields it does not know, since the console only shows what the API returns.
import type { Condition, Conditions, SpecNode } from './api-types';
import { compactJson } from './format';
import { rowsOf, type SchemaRow } from './workflow/output-schema';

export interface Edge {
  /** Why this edge is taken: a branch condition, "otherwise", or nothing for a plain next. */
  label: string | null;
  /** The target node id; null ends the item's path. */
  target: string | null;
}

const OPS: Record<string, string> = {
  equals: '=',
  not_equals: '≠',
  contains: 'contains',
  gt: '>',
  gte: '≥',
  lt: '<',
  lte: '≤',
  exists: 'exists',
  not_exists: 'is missing',
};

function describeCondition(condition: Condition): string {
  const op = OPS[condition.op] ?? condition.op;
  if (condition.op === 'exists' || condition.op === 'not_exists') return `${condition.field} ${op}`;
  return `${condition.field} ${op} ${compactJson(condition.value, 60)}`;
}

export function describeConditions(conditions: Conditions | undefined): string {
  if (!conditions || typeof conditions !== 'object') return '';
  if ('all' in conditions && Array.isArray(conditions.all)) return conditions.all.map(describeCondition).join(' and ');
  if ('any' in conditions && Array.isArray(conditions.any)) return conditions.any.map(describeCondition).join(' or ');
  if ('field' in conditions) return describeCondition(conditions);
  return compactJson(conditions, 80);
}

export function edges(node: SpecNode): Edge[] {
  if (node.kind === 'branch' && Array.isArray(node.branches)) {
    return [
      ...node.branches.map((branch) => ({
        label: `if ${describeConditions(branch.when)}`,
        target: branch.next ?? null,
      })),
      { label: 'otherwise', target: node.otherwise ?? null },
    ];
  }
  return [{ label: null, target: typeof node.next === 'string' ? node.next : null }];
}

const GRAPH_FIELDS = new Set(['id', 'kind', 'next', 'branches', 'otherwise']);

/** Fields of plain values (a transform's `set`, `cast`, `rename`): shown as "name: value" lines, not as JSON. */
const isFlat = (raw: unknown): raw is Record<string, string | number | boolean> =>
  typeof raw === 'object' &&
  raw !== null &&
  !Array.isArray(raw) &&
  Object.values(raw).every((v) => ['string', 'number', 'boolean'].includes(typeof v));

/** An llm step's output schema as the editor's rows say it: "amount: number, required", nested fields indented. */
function schemaLines(rows: SchemaRow[], indent = ''): string[] {
  return rows.flatMap((r) => {
    const type = r.type === 'array' ? `list of ${r.items}` : r.type;
    const line = `${indent}${r.name}: ${type}${r.required ? ', required' : ''}${r.description ? ` (${r.description})` : ''}`;
    return [line, ...schemaLines(r.fields, `${indent}  `)];
  });
}

/**
 * The kind-specific settings of a node, as label/value pairs; empty defaults are left out. A group of values that
 * is not flat (a tool's arguments with a body inside) comes as `data`, shown as named values (DataFields), not JSON.
 */
export function settings(node: SpecNode): { label: string; value: string; long: boolean; data?: unknown }[] {
  const rows: { label: string; value: string; long: boolean; data?: unknown }[] = [];
  for (const [key, raw] of Object.entries(node)) {
    if (GRAPH_FIELDS.has(key) || raw === undefined || raw === null) continue;
    if (Array.isArray(raw) && raw.length === 0) continue;
    if (typeof raw === 'object' && !Array.isArray(raw) && Object.keys(raw).length === 0) continue;
    let value: string;
    if (key === 'when') value = describeConditions(raw as Conditions);
    else if (typeof raw === 'string') value = raw;
    else if (Array.isArray(raw) && raw.every((v) => typeof v === 'string')) value = raw.join(', ');
    else if (isFlat(raw))
      value = Object.entries(raw)
        .map(([k, v]) => `${k}: ${String(v)}`)
        .join('\n');
    else if (key === 'output_schema' && rowsOf(raw)) value = schemaLines(rowsOf(raw)!).join('\n');
    else {
      rows.push({ label: key.replace(/_/g, ' '), value: '', long: true, data: raw });
      continue;
    }
    rows.push({ label: key.replace(/_/g, ' '), value, long: value.length > 80 || value.includes('\n') });
  }
  return rows;
}
