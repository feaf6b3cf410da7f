// A change between two versions as a person reads it: "nodes[2].branches[0].when.value" is "Node 'route' → Branch
// 1, condition 1: value", in the words the editor's forms use (problems.ts), not the path into the JSON.
import { where } from './problems';

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
    const { place, field } = where(rest);
    return `${node} → ${[place, field].filter(Boolean).join(': ')}`;
  }
  const { place, field } = where(partsOf(path));
  return [place, field].filter(Boolean).join(': ') || path;
}
