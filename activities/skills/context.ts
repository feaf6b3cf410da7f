// The skills a model step loads into its system prompt: the platform skills of the tools the model is offered,
// and the user skills the agent lists, in the version in force when the run started (or the one it pins), so
// every item of a run sees the same text (the system prompt stays cacheable) and an upload mid-run changes
// nothing for a run already under way. What was loaded is recorded for run details.
import type Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentSpec } from '../../model/agent';
import { platformSkillsFor } from '../../model/platform-skills';
import { parseSkillRef, type SkillUsed } from '../../model/skill';
import { recordSkillContext, resolveSkills, runStart } from '../../db/skills';
import type { ActivityDeps } from '../deps';

/** XML-ish tags the model reads as boundaries; a name cannot hold a quote (model/skill.ts). */
const skillBlock = (attrs: string, content: string) => `<skill ${attrs}>\n${content.trim()}\n</skill>`;

export async function loadSkillContext({
  deps,
  spec,
  tools,
  runId,
  seq,
  nodeId,
}: {
  deps: ActivityDeps;
  spec: AgentSpec;
  /** The tools the model is offered in this step. */
  tools: readonly string[];
  runId: string;
  seq: number;
  nodeId: string;
}): Promise<Anthropic.TextBlockParam | undefined> {
  const { knex } = deps;
  const platform = platformSkillsFor(tools);
  if (platform.length === 0 && spec.skills.length === 0) return undefined; // most steps: no lookup at all
  const run = await knex('runs').where({ id: runId }).first('workspace_id');
  const resolved = await resolveSkills(knex, run.workspace_id, spec.skills.map(parseSkillRef), runStart(knex, runId));
  const problems = resolved.flatMap((r) => (r.problem ? [r.problem] : []));
  if (problems.length > 0)
    // Running without instructions the agent relies on would give answers nobody asked for: the step fails, saying why.
    throw ApplicationFailure.nonRetryable(
      `${problems.join('; ')}: upload it (POST /v1/skills) or remove it from the agent's "skills"`,
      'SkillNotFound',
    );
  const used: SkillUsed[] = [
    ...platform.map((s) => ({ name: s.name, kind: 'platform' as const, version: null })),
    ...resolved.map((r) => ({ name: r.ref.name, kind: 'user' as const, version: r.version!.version })),
  ];
  if (used.length === 0) return undefined;
  await recordSkillContext(knex, { runId, itemSeq: seq, nodeId, skills: used });
  const blocks = [
    ...platform.map((s) => skillBlock(`name="${s.name}" kind="platform"`, s.content)),
    ...resolved.map((r) => skillBlock(`name="${r.ref.name}" version="${r.version!.version}"`, r.version!.content)),
  ];
  return {
    type: 'text',
    text: `Skills loaded for this step: follow them where they apply.\n\n${blocks.join('\n\n')}`,
  };
}
