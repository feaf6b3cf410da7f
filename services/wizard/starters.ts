// Without a model the wizard cannot generate: it offers the shipped examples (examples/*.json, the same the demo
// workspace is seeded with) and a blank agent to start from instead.
import fs from 'node:fs';
import path from 'node:path';
import type { AgentSpec } from '../../model/agent';
import { parseAgentSpec } from '../../model/agent-checks';
import { examplesDir } from '../../db/seeds';
import { ApiError } from '../errors';

export interface Starter {
  /** `blank`, or the example's file name without .json. */
  id: string;
  name: string;
  description: string;
  /** Whether it has model steps, which fail until a model is configured. */
  needs_model: boolean;
}

function examples(): { id: string; spec: AgentSpec }[] {
  return fs
    .readdirSync(examplesDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({
      id: f.replace(/\.json$/, ''),
      spec: parseAgentSpec(JSON.parse(fs.readFileSync(path.join(examplesDir, f), 'utf8'))),
    }));
}

/** A blank agent: its items come in and go out as a JSON file, for Operator Mode to build on. */
function blankSpec(name: string): AgentSpec {
  return parseAgentSpec({
    name,
    nodes: [
      { kind: 'input', id: 'items', format: 'auto', next: 'result' },
      { kind: 'output', id: 'result', format: 'json' },
    ],
  });
}

export function listStarters(): Starter[] {
  return [
    {
      id: 'blank',
      name: 'Blank agent',
      description: 'An input and a JSON output, to build on in Operator Mode.',
      needs_model: false,
    },
    ...examples().map(({ id, spec }) => ({
      id,
      name: spec.name,
      description: spec.description,
      needs_model: spec.nodes.some((n) => n.kind === 'llm'),
    })),
  ];
}

export function starterSpec(id: string, name: string): AgentSpec {
  if (id === 'blank') return blankSpec(name);
  const found = examples().find((e) => e.id === id);
  if (!found)
    throw new ApiError(
      422,
      'unknown_starter',
      `no starter "${id}": choose "blank" or one of ${examples()
        .map((e) => `"${e.id}"`)
        .join(', ')}`,
    );
  return found.spec;
}

/** Sample input for a starter's test run: one item the example's own tests use, where it says so. */
export function starterSampleInput(spec: AgentSpec): string {
  const input = spec.nodes[0];
  if (input.kind === 'input' && (input.format === 'csv' || input.format === 'tsv')) return 'id,amount\n1,1500\n2,40';
  return JSON.stringify([
    { id: 1, amount: 1500 },
    { id: 2, amount: 40 },
  ]);
}
