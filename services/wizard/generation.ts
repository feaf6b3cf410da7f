// The wizard's three generated steps (spec §1.11): clarifying questions from the goal, instructions in six parts
// from the answers, and the workflow graph from the instructions. Each is one structured answer from the model;
// the graph is checked by the same schema and checks as the agents API, and when it does not validate the
// problems go back to the model once for a corrected graph.
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { agentSpecSchema, type AgentSpec } from '../../model/agent';
import { AgentSpecError, checkAgentSpec } from '../../model/agent-checks';
import { toolDefinitions } from '../../model/tools';
import { connectionKinds } from '../../model/connection';
import {
  generatedInstructionsSchema,
  renderInstructions,
  wizardQuestionsSchema,
  type InstructionParts,
  type ProposedConnection,
} from '../../model/wizard';
import type { WizardAttempt, WizardMessage, WizardSessionRow, WizardUsage } from '../../db/wizard-sessions';
import { ApiError } from '../errors';
import { addUsage, structuredTurn, type ModelSettings, type StructuredTool } from './model-client';

const toolSchema = (schema: z.ZodType): Record<string, unknown> => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return rest;
};

const system = [
  'You help a person create an AI agent on Cadre, a platform where agents process batches of items through a node',
  'graph (input, transform, branch, tool, llm, retrieve, approval, flag_for_review, output, call_agent nodes),',
  'with plain-English instructions, connected tools (integrations), sources and an approval policy.',
  'Answer only through the tool you are given.',
].join(' ');

/** What is known so far, as the user turn of every step. */
function contextOf(session: WizardSessionRow): string {
  const parts = [`Goal:\n${session.goal}`];
  if (session.files.length > 0)
    parts.push(
      `Files uploaded for context (each is a source the agent can search by its name):\n${session.files
        .map((f) => `- "${f.source}" (${f.format}, ${f.size} bytes)${f.excerpt ? `, begins:\n${f.excerpt}` : ''}`)
        .join('\n')}`,
    );
  const answered = session.questions.filter((q) => q.answer?.trim());
  if (answered.length > 0)
    parts.push(
      `Clarifying questions and the answers:\n${answered.map((q) => `Q: ${q.question}\nA: ${q.answer}`).join('\n')}`,
    );
  return parts.join('\n\n');
}

interface StepResult<T> {
  value: T;
  conversation: WizardMessage[];
  usage: WizardUsage;
}

const invalidAnswer = (what: string, err: z.ZodError) =>
  new ApiError(
    502,
    'model_answer_invalid',
    `the model's ${what} were not usable (${err.issues.map((i) => i.message).join('; ')}); try again`,
  );

export async function generateQuestions(
  model: ModelSettings,
  session: WizardSessionRow,
): Promise<StepResult<z.infer<typeof wizardQuestionsSchema>['questions']>> {
  const user = `${contextOf(session)}\n\nAsk the few clarifying questions (at most 8) whose answers you need to write this agent's instructions: what the items are, where they come from, what counts as success, edge cases, which systems to act in, approvals.`;
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: user }];
  const turn = await structuredTurn(model, system, messages, {
    name: 'ask_questions',
    description: 'The clarifying questions to ask the person, each with why it matters.',
    inputSchema: toolSchema(wizardQuestionsSchema),
  });
  const parsed = wizardQuestionsSchema.safeParse(turn.input);
  if (!parsed.success) throw invalidAnswer('questions', parsed.error);
  return {
    value: parsed.data.questions,
    conversation: [
      { role: 'user', step: 'questions', content: user },
      { role: 'assistant', step: 'questions', content: turn.assistant.content },
    ],
    usage: turn.usage,
  };
}

export async function generateInstructions(
  model: ModelSettings,
  session: WizardSessionRow,
): Promise<StepResult<{ instructions: InstructionParts; connections: ProposedConnection[] }>> {
  const user = `${contextOf(session)}\n\nWrite the agent's instructions in six parts: the job, success criteria, edge cases, triggers (manual, schedule, event, API), tools, and runtime parameters. List the integrations it needs (kinds: ${connectionKinds.join(', ')}), each with a connection name and what it is used for; built-in tools (HTTP, files, the state store, email through SMTP) need none.`;
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: user }];
  const turn = await structuredTurn(model, system, messages, {
    name: 'write_instructions',
    description: "The agent's instructions in six parts, and the integrations they need.",
    inputSchema: toolSchema(generatedInstructionsSchema),
  });
  const parsed = generatedInstructionsSchema.safeParse(turn.input);
  if (!parsed.success) throw invalidAnswer('instructions', parsed.error);
  return {
    value: parsed.data,
    conversation: [
      { role: 'user', step: 'instructions', content: user },
      { role: 'assistant', step: 'instructions', content: turn.assistant.content },
    ],
    usage: turn.usage,
  };
}

/** The problems of a generated graph, as the agents API would name them (422), or none. */
export function specProblems(input: unknown): { spec?: AgentSpec; problems: string[] } {
  const parsed = agentSpecSchema.safeParse(input);
  if (!parsed.success)
    return {
      problems: parsed.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)),
    };
  try {
    return { spec: checkAgentSpec(parsed.data), problems: [] };
  } catch (err) {
    if (err instanceof AgentSpecError) return { problems: [err.message] };
    throw err;
  }
}

/** The graph tool: the agent spec's own JSON Schema, plus the sample input the test run will use. */
const workflowTool: StructuredTool = (() => {
  const spec = toolSchema(agentSpecSchema) as { properties: Record<string, unknown>; required: string[] };
  return {
    name: 'submit_agent',
    description: 'The agent: name, description, node graph, policy, sources and connections, with a sample input.',
    inputSchema: {
      ...spec,
      properties: {
        ...spec.properties,
        sample_input: {
          type: 'string',
          description: 'A small realistic input (JSON, CSV or lines) a test run can process.',
        },
      },
      required: [...spec.required, 'sample_input'],
    },
  };
})();

const toolList = Object.values(toolDefinitions)
  .map((t) => `- ${t.name}: ${t.description}`)
  .join('\n');

export async function generateWorkflow(
  model: ModelSettings,
  session: WizardSessionRow & { instructions: InstructionParts },
): Promise<StepResult<{ spec?: AgentSpec; sampleInput: string; attempts: WizardAttempt[] }>> {
  const connections = session.connections.map((c) => `- "${c.name}" (${c.kind}): ${c.purpose}`).join('\n');
  const user = [
    contextOf(session),
    `Instructions:\n${renderInstructions(session.instructions)}`,
    connections ? `Connections (list their names in "connections"):\n${connections}` : '',
    session.files.length ? `Sources: ${session.files.map((f) => `"${f.source}"`).join(', ')}` : '',
    `Tools (a connection's tools are "<kind>.<tool>" with {"connection": "<name>"} in the arguments, or "mcp.<connection>.<tool>" / "api.<connection>.<operation>"):\n${toolList}`,
    'Build the workflow graph: the first node is the one "input" node; every node reachable; no cycles. Propose a sample input a test run can process without a real system.',
  ]
    .filter(Boolean)
    .join('\n\n');
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: user }];
  const conversation: WizardMessage[] = [{ role: 'user', step: 'workflow', content: user }];
  const attempts: WizardAttempt[] = [];
  let usage: WizardUsage = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cost_usd: 0 };

  // The first graph, and when it does not validate, one corrected one with the problems sent back.
  for (let attempt = 0; attempt < 2; attempt++) {
    const turn = await structuredTurn(model, system, messages, workflowTool);
    usage = addUsage(usage, turn.usage);
    conversation.push({ role: 'assistant', step: 'workflow', content: turn.assistant.content });
    const { spec, problems } = specProblems(turn.input);
    attempts.push({ problems, at: new Date().toISOString() });
    const sample = (turn.input as { sample_input?: unknown }).sample_input;
    const sampleInput = typeof sample === 'string' ? sample : '';
    if (spec) return { value: { spec, sampleInput, attempts }, conversation, usage };
    const correction: Anthropic.MessageParam = {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: turn.toolUseId,
          is_error: true,
          content: `The agent does not validate:\n${problems.map((p) => `- ${p}`).join('\n')}\nSend the corrected agent.`,
        },
      ],
    };
    messages.push(turn.assistant, correction);
    conversation.push({ role: 'user', step: 'workflow', content: correction.content });
  }
  return { value: { sampleInput: '', attempts }, conversation, usage };
}
