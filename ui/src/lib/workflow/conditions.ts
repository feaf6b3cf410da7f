// Conditions as rows a person fills in: field / comparison / value, joined by "all" or "any". The agent spec keeps a
// single condition as it is and several under `all` or `any` (model/agent.ts conditionsSchema).
import type { Condition, Conditions } from '$lib/api-types';

export const COMPARISONS: { op: string; label: string }[] = [
  { op: 'equals', label: 'is' },
  { op: 'not_equals', label: 'is not' },
  { op: 'contains', label: 'contains' },
  { op: 'gt', label: 'is more than' },
  { op: 'gte', label: 'is at least' },
  { op: 'lt', label: 'is less than' },
  { op: 'lte', label: 'is at most' },
  { op: 'exists', label: 'is present' },
  { op: 'not_exists', label: 'is missing' },
];

export const takesValue = (op: string) => op !== 'exists' && op !== 'not_exists';

export function rowsOf(when: Conditions | undefined): { join: 'all' | 'any'; rows: Condition[] } {
  if (!when || typeof when !== 'object') return { join: 'all', rows: [] };
  if ('all' in when && Array.isArray(when.all)) return { join: 'all', rows: when.all };
  if ('any' in when && Array.isArray(when.any)) return { join: 'any', rows: when.any };
  return { join: 'all', rows: [when as Condition] };
}

export function conditionsOf(join: 'all' | 'any', rows: Condition[]): Conditions | undefined {
  if (rows.length === 0) return undefined;
  if (rows.length === 1) return rows[0];
  return join === 'any' ? { any: rows } : { all: rows };
}

/** What is typed as a value: a number when it reads as one (so "more than 10000" compares numbers), else text. */
export function valueOf(typed: string): unknown {
  const t = typed.trim();
  if (t !== '' && !Number.isNaN(Number(t))) return Number(t);
  if (t === 'true' || t === 'false') return t === 'true';
  return typed;
}
