// Automatic layout of an agent's node graph, left to right in the order items flow (dagre, as n8n and Dify lay out
// their canvases). Edge labels are laid out as space of their own between the columns, so a branch's condition is
// never drawn under a node or on top of another label.
import dagre from '@dagrejs/dagre';
import type { SpecNode } from '$lib/api-types';
import { exitsOf } from './edit';

export interface Size {
  width: number;
  height: number;
}

export interface LaidEdge {
  from: string;
  handle: string;
  /** Null: the item's path ends here (drawn as a small end mark). */
  to: string | null;
  label: string | null;
  points: { x: number; y: number }[];
  /** The label's centre. */
  labelAt: { x: number; y: number } | null;
  /** Where the end mark's dot is, for an edge to no node (its word "done" follows it). */
  endAt: { x: number; y: number } | null;
}

export interface Layout {
  /** Top-left corner of each node. */
  positions: Record<string, { x: number; y: number }>;
  edges: LaidEdge[];
  width: number;
  height: number;
}

/** An edge label's size at the diagrams' 11px font: wide enough for the whole condition. */
export const labelSize = (label: string): Size => ({ width: Math.ceil(label.length * 6.4) + 12, height: 16 });

const END = 10;
/** An end mark's room: its dot and the word "done" after it, so a person reads where an item's path ends. */
const END_WIDTH = 46;

/**
 * Lays out the graph. `sizeOf` gives each node's box; `ends` draws the exits that go nowhere as end marks (the
 * read-only diagram shows them; the canvas shows its open handles instead).
 */
export function layoutGraph(nodes: SpecNode[], sizeOf: (node: SpecNode) => Size, ends = true): Layout {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'LR', ranksep: 56, nodesep: 28, edgesep: 18, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set(nodes.map((n) => n.id));
  for (const n of nodes) g.setNode(n.id, { ...sizeOf(n) });
  const edges: Omit<LaidEdge, 'points' | 'labelAt' | 'endAt'>[] = [];
  for (const n of nodes) {
    for (const exit of exitsOf(n)) {
      const to = exit.target && ids.has(exit.target) ? exit.target : null;
      if (!to && !ends) continue;
      const key = `${n.id}:${exit.handle}`;
      if (!to) g.setNode(`end:${key}`, { width: END_WIDTH, height: END });
      const size = exit.label ? labelSize(exit.label) : { width: 0, height: 0 };
      g.setEdge(n.id, to ?? `end:${key}`, { ...size, labelpos: 'c' }, key);
      edges.push({ from: n.id, handle: exit.handle, to, label: exit.label });
    }
  }
  dagre.layout(g);
  const positions: Record<string, { x: number; y: number }> = {};
  for (const n of nodes) {
    const p = g.node(n.id);
    positions[n.id] = { x: p.x - p.width / 2, y: p.y - p.height / 2 };
  }
  const graph = g.graph();
  return {
    positions,
    width: graph.width ?? 0,
    height: graph.height ?? 0,
    edges: edges.map((e) => {
      const key = `${e.from}:${e.handle}`;
      const laid = g.edge({ v: e.from, w: e.to ?? `end:${key}`, name: key });
      const end = e.to ? null : g.node(`end:${key}`);
      return {
        ...e,
        points: laid.points ?? [],
        labelAt: e.label && laid.x !== undefined && laid.y !== undefined ? { x: laid.x, y: laid.y } : null,
        // The dot where the edge arrives (the end mark's left side); its word follows.
        endAt: end ? { x: end.x - END_WIDTH / 2 + END / 2, y: end.y } : null,
      };
    }),
  };
}
