// Warnings (never refusals) about the sources an agent lists: names with no source in the workspace yet (an
// agent imported from another workspace, a source still to upload) and more sources than the 10 to 20 the
// service recommends (spec §8). The same description of an unknown name refuses a search naming one.
import type { Knex } from 'knex';
import { listSources } from '../db/sources';
import type { AgentSpec } from '../model/agent';

export const recommendedMaxSources = 20;

export async function sourceWarnings(knex: Knex, workspaceId: string, spec: AgentSpec): Promise<string[]> {
  const warnings: string[] = [];
  const names = [...new Set(spec.sources)];
  if (names.length > recommendedMaxSources) {
    warnings.push(
      `the agent uses ${names.length} sources; 10 to ${recommendedMaxSources} are recommended, as retrieval gets less precise with more`,
    );
  }
  for (const unknown of await unknownSources(knex, workspaceId, names)) {
    warnings.push(`there is ${describeUnknownSource(unknown, ' yet')}; retrieval skips it until one is added`);
  }
  return warnings;
}

export interface UnknownSource {
  name: string;
  /** The workspace's source whose name is closest, when the unknown one looks like a typo of it. */
  closest?: string;
}

/** The names among `names` that are not sources of the workspace, each with the name it may be a typo of. */
export async function unknownSources(knex: Knex, workspaceId: string, names: string[]): Promise<UnknownSource[]> {
  if (names.length === 0) return [];
  const known = (await listSources(knex, workspaceId)).map((s) => s.name);
  const exact = new Set(known);
  return names.filter((n) => !exact.has(n)).map((name) => ({ name, closest: closestName(name, known) }));
}

export const describeUnknownSource = ({ name, closest }: UnknownSource, when = '') =>
  `no source named "${name}" in this workspace${when}${closest ? ` (did you mean "${closest}"?)` : ''}`;

/** The candidate a few typed characters away from `name` (case aside), if one is clearly the nearest. */
function closestName(name: string, candidates: string[]): string | undefined {
  const wanted = name.toLowerCase();
  const allowed = Math.max(1, Math.floor(wanted.length / 4));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (distance <= allowed && (!best || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length];
}
