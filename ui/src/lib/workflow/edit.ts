// Changes to an agent's node graph made on the editor's canvas: adding a node from the palette, pointing one of a
// node's exits at another node, removing nodes and renaming them. Each returns new nodes; references stay consistent
// (a removed node's incoming exits end the item's path, a renamed node's incoming exits follow the new id).
import type { SpecNode } from '$lib/api-types';
import { describeConditions } from '$lib/graph';

/** The kinds a person adds from the palette, in the order they are offered, with what each does in plain words. */
export const PALETTE: { kind: string; label: string; help: string }[] = [
  { kind: 'transform', label: 'Transform', help: 'Set, rename or convert fields of each item' },
  { kind: 'branch', label: 'Branch', help: 'Send each item one way or another by conditions' },
  { kind: 'tool', label: 'Tool', help: 'Call a tool: a web request, a database, email…' },
  { kind: 'llm', label: 'Model step', help: 'Ask the model to read or write something' },
  { kind: 'retrieve', label: 'Search sources', help: 'Find passages in the agent’s sources' },
  { kind: 'approval', label: 'Approval', help: 'A person approves each item before it goes on' },
  { kind: 'flag_for_review', label: 'Flag for review', help: 'Set an item aside for a person to look at' },
  { kind: 'output', label: 'Output', help: 'Collect the items into a file' },
  { kind: 'call_agent', label: 'Call an agent', help: 'Hand each item to another agent' },
];

const TEMPLATES: Record<string, (id: string) => SpecNode> = {
  transform: (id) => ({ kind: 'transform', id, set: {}, next: null }),
  branch: (id) => ({
    kind: 'branch',
    id,
    branches: [{ when: { field: '', op: 'equals', value: '' }, next: null }],
    otherwise: null,
  }),
  tool: (id) => ({ kind: 'tool', id, tool: 'http.request', arguments: { url: 'https://example.com' }, next: null }),
  llm: (id) => ({ kind: 'llm', id, instructions: 'Say what the model should do with each item.', next: null }),
  retrieve: (id) => ({ kind: 'retrieve', id, query: '{{text}}', next: null }),
  approval: (id) => ({ kind: 'approval', id, message: 'Approve this item?', next: null }),
  flag_for_review: (id) => ({ kind: 'flag_for_review', id, reason: 'Needs a person', next: null }),
  output: (id) => ({ kind: 'output', id, format: 'csv', next: null }),
  call_agent: (id) => ({ kind: 'call_agent', id, agent_id: '', next: null }),
};

/** A new node of this kind with an id no other node has: `transform-1`, `transform-2`, …. */
export function newNode(nodes: SpecNode[], kind: string): SpecNode {
  const base = kind.replace(/_/g, '-');
  let n = 1;
  while (nodes.some((x) => x.id === `${base}-${n}`)) n++;
  return TEMPLATES[kind](`${base}-${n}`);
}

/** One way out of a node: its `next`, or one of a branch's branches, or a branch's `otherwise`. */
export interface Exit {
  /** The handle on the canvas: `next`, `branch-0`, `branch-1`, …, `otherwise`. */
  handle: string;
  /** What a person reads beside it; null for a plain next. */
  label: string | null;
  target: string | null;
}

export function exitsOf(node: SpecNode): Exit[] {
  if (node.kind === 'branch') {
    return [
      ...(node.branches ?? []).map((b, i) => ({
        handle: `branch-${i}`,
        label: `if ${describeConditions(b.when) || '…'}`,
        target: b.next ?? null,
      })),
      { handle: 'otherwise', label: 'otherwise', target: node.otherwise ?? null },
    ];
  }
  return [{ handle: 'next', label: null, target: node.next ?? null }];
}

/** The node with one exit pointed at `target` (null ends the item's path there). */
export function withExit(node: SpecNode, handle: string, target: string | null): SpecNode {
  if (handle === 'otherwise') return { ...node, otherwise: target };
  const branch = /^branch-(\d+)$/.exec(handle);
  if (branch && node.branches) {
    const i = Number(branch[1]);
    return { ...node, branches: node.branches.map((b, j) => (j === i ? { ...b, next: target } : b)) };
  }
  return { ...node, next: target };
}

export function connect(nodes: SpecNode[], source: string, handle: string, target: string | null): SpecNode[] {
  if (source === target) return nodes; // a node cannot lead to itself (the API refuses cycles)
  return nodes.map((n) => (n.id === source ? withExit(n, handle, target) : n));
}

/** Every exit pointing at `from` points at `to` instead. */
function retarget(node: SpecNode, from: string, to: string | null): SpecNode {
  let out = node;
  for (const exit of exitsOf(node)) if (exit.target === from) out = withExit(out, exit.handle, to);
  return out;
}

/** Removes nodes; the exits that led to them now end the item's path. The input node stays. */
export function removeNodes(nodes: SpecNode[], ids: string[]): SpecNode[] {
  const gone = new Set(ids.filter((id) => nodes.find((n) => n.id === id)?.kind !== 'input'));
  let kept = nodes.filter((n) => !gone.has(n.id));
  for (const id of gone) kept = kept.map((n) => retarget(n, id, null));
  return kept;
}

/** Gives a node a new id; the exits that led to it follow. */
export function renameNode(nodes: SpecNode[], from: string, to: string): SpecNode[] {
  return nodes.map((n) => retarget(n.id === from ? { ...n, id: to } : n, from, to));
}
