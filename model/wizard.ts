// The agent creation wizard's own shapes (spec §1.11–12): clarifying questions, instructions in the six parts the
// spec names, and the integrations they need. Pure, so the API validates the model's answers and people's edits
// with the same schemas, and the OpenAPI document shows them.
import { z } from 'zod';
import { connectionKinds, connectionName } from './connection';

export const wizardQuestionsSchema = z.object({
  questions: z
    .array(
      z.object({
        question: z.string().min(1).max(500),
        why: z.string().max(500).default(''),
      }),
    )
    .min(1)
    .max(8),
});

/** The six parts of an agent's instructions (spec §1.12), each plain English. */
export const instructionPartsSchema = z.object({
  job: z.string().min(1, 'say what the job is').max(15_000),
  success_criteria: z.string().max(15_000).default(''),
  edge_cases: z.string().max(15_000).default(''),
  triggers: z.string().max(15_000).default(''),
  tools: z.string().max(15_000).default(''),
  runtime_parameters: z.string().max(15_000).default(''),
});
export type InstructionParts = z.infer<typeof instructionPartsSchema>;

export const instructionPartTitles: Record<keyof InstructionParts, string> = {
  job: 'Job',
  success_criteria: 'Success criteria',
  edge_cases: 'Edge cases',
  triggers: 'Triggers',
  tools: 'Tools',
  runtime_parameters: 'Runtime parameters',
};

/** An integration the instructions need: a kind of connection (GET /v1/connectors, SQL, MCP…) and what it is for. */
export const proposedConnectionSchema = z.object({
  kind: z.enum(connectionKinds),
  /** The connection's name in Integrations, which the agent's "connections" and tool names use. */
  name: connectionName,
  purpose: z.string().min(1).max(500),
});
export type ProposedConnection = z.infer<typeof proposedConnectionSchema>;

export const generatedInstructionsSchema = z.object({
  instructions: instructionPartsSchema,
  connections: z.array(proposedConnectionSchema).max(10).default([]),
});

/** The instructions as the agent keeps them: one Markdown text with a heading per part (empty parts left out). */
export function renderInstructions(parts: InstructionParts): string {
  return (Object.keys(instructionPartTitles) as (keyof InstructionParts)[])
    .filter((k) => parts[k].trim() !== '')
    .map((k) => `## ${instructionPartTitles[k]}\n\n${parts[k].trim()}`)
    .join('\n\n');
}
