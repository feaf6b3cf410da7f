// Warnings (not refusals) about the skills an agent lists when it is saved: an agent may be saved before its
// skills are uploaded, or imported from another workspace, as with sources. It cannot become Ready or Live while
// one is missing (db/agents.ts), and a run that meets one fails the model step, saying which.
import type { Knex } from 'knex';
import { unresolvedSkills } from '../db/skills';
import type { AgentSpec } from '../model/agent';
import { parseSkillRef } from '../model/skill';

export async function skillWarnings(knex: Knex, workspaceId: string, spec: AgentSpec): Promise<string[]> {
  const problems = await unresolvedSkills(knex, workspaceId, [...new Set(spec.skills)].map(parseSkillRef));
  return problems.map((p) => `${p} yet; upload it before the agent goes live, or its model steps fail`);
}
