// Warnings (never refusals) about the sources an agent lists: names with no source in the workspace yet (an
// agent imported from another workspace, a source still to upload) and more sources than the 10 to 20 the
// service recommends (spec §8).
import type { Knex } from 'knex';
import { unknownSourceNames } from '../db/sources';
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
  for (const name of await unknownSourceNames(knex, workspaceId, names)) {
    warnings.push(`there is no source named "${name}" in this workspace yet; retrieval skips it until one is added`);
  }
  return warnings;
}
