// Sizes and colours shared by the editor's canvas and the read-only diagram, so both draw a node the same way.
import type { SpecNode } from '$lib/api-types';
import { exitsOf } from './edit';

export const NODE_WIDTH = 200;
export const NODE_HEAD = 48;
export const EXIT_ROW = 24;

export const KIND_COLORS: Record<string, string> = {
  input: '#2563eb',
  llm: '#7c3aed',
  tool: '#0f766e',
  approval: '#b45309',
  flag_for_review: '#b45309',
  branch: '#475569',
  transform: '#475569',
  output: '#15803d',
  retrieve: '#be185d',
  call_agent: '#1d4ed8',
};

/** A canvas node's box: a branch is taller by one row per way out, each with its own handle. */
export function canvasSize(node: SpecNode) {
  const exits = exitsOf(node);
  return { width: NODE_WIDTH, height: NODE_HEAD + (exits.length > 1 ? exits.length * EXIT_ROW : 0) };
}
