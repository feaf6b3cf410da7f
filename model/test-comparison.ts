// A test run on past items compared, item by item, with the runs those items came from: the same output or not,
// the same route (the output node that collected the item, or the node where it stopped), the same status. Pure.

export interface ItemOutcome {
  status: string;
  output: unknown;
  route: string | null;
  error: string | null;
}

export interface ItemDifference {
  output: 'same' | 'changed';
  route: 'same' | 'changed';
  status: 'same' | 'changed';
  /** Failed in the test run, and did not in the original one. */
  now_fails: boolean;
  /** Failed in the original run, and does not in the test run. */
  now_passes: boolean;
}

const settled = new Set(['done', 'failed', 'skipped']);

/** What a test run's tool call answers instead of acting (activities/effects-ledger.ts). */
const isPlanned = (v: unknown) =>
  typeof v === 'object' && v !== null && (v as Record<string, unknown>).planned === true;

/**
 * Whether the test run's value gives the same as the original. A value the test run only planned (a call that would
 * have acted) stands for whatever the real call answered, so an email sent for real in the original run and planned
 * in the test does not count as a change.
 */
export function sameValue(original: unknown, test: unknown): boolean {
  if (isPlanned(test)) return true;
  if (Array.isArray(original) || Array.isArray(test)) {
    if (!Array.isArray(original) || !Array.isArray(test) || original.length !== test.length) return false;
    return original.every((v, i) => sameValue(v, test[i]));
  }
  if (typeof original === 'object' && original !== null && typeof test === 'object' && test !== null) {
    const a = original as Record<string, unknown>;
    const b = test as Record<string, unknown>;
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => sameValue(a[k], b[k]));
  }
  return original === test;
}

export function compareOutcomes(original: ItemOutcome | null, test: ItemOutcome): ItemDifference | null {
  if (!settled.has(test.status)) return null; // not through the test run yet
  const before = original ?? { status: 'missing', output: null, route: null, error: null };
  return {
    output: sameValue(before.output ?? null, test.output ?? null) ? 'same' : 'changed',
    route: before.route === test.route ? 'same' : 'changed',
    status: before.status === test.status ? 'same' : 'changed',
    now_fails: test.status === 'failed' && before.status !== 'failed',
    now_passes: before.status === 'failed' && test.status !== 'failed',
  };
}

export interface ComparisonSummary {
  items: number;
  /** Items the test run has settled; the rest are still under way. */
  compared: number;
  same_output: number;
  output_changed: number;
  route_changed: number;
  status_changed: number;
  now_fail: number;
  now_pass: number;
  /** "37 of 40 items give the same output; 2 route differently; 1 now fails". */
  text: string;
}

export function summarize(differences: (ItemDifference | null)[]): ComparisonSummary {
  const done = differences.filter((d): d is ItemDifference => d !== null);
  const count = (f: (d: ItemDifference) => boolean) => done.filter(f).length;
  const s = {
    items: differences.length,
    compared: done.length,
    same_output: count((d) => d.output === 'same'),
    output_changed: count((d) => d.output === 'changed'),
    route_changed: count((d) => d.route === 'changed'),
    status_changed: count((d) => d.status === 'changed'),
    now_fail: count((d) => d.now_fails),
    now_pass: count((d) => d.now_passes),
  };
  const parts = [`${s.same_output} of ${s.items} items give the same output`];
  if (s.route_changed > 0) parts.push(`${s.route_changed} route${s.route_changed === 1 ? 's' : ''} differently`);
  if (s.now_fail > 0) parts.push(`${s.now_fail} now fail${s.now_fail === 1 ? 's' : ''}`);
  if (s.now_pass > 0) parts.push(`${s.now_pass} no longer fail${s.now_pass === 1 ? 's' : ''}`);
  if (s.compared < s.items) parts.push(`${s.items - s.compared} still running`);
  return { ...s, text: parts.join('; ') };
}
