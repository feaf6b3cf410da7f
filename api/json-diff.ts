// The differences between two JSON documents, as a flat list a person can read: each changed path with its
// value before and after (absent on one side when added or removed).
export interface Change {
  path: string;
  from?: unknown;
  to?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export function jsonDiff(a: unknown, b: unknown, path = ''): Change[] {
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    return keys.flatMap((k) => {
      const p = path ? `${path}.${k}` : k;
      if (!(k in b)) return [{ path: p, from: a[k] }];
      if (!(k in a)) return [{ path: p, to: b[k] }];
      return jsonDiff(a[k], b[k], p);
    });
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const changes: Change[] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const p = `${path}[${i}]`;
      if (i >= b.length) changes.push({ path: p, from: a[i] });
      else if (i >= a.length) changes.push({ path: p, to: b[i] });
      else changes.push(...jsonDiff(a[i], b[i], p));
    }
    return changes;
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [{ path: path || '$', from: a, to: b }];
}
