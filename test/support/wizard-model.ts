// The model's side of the creation wizard, scripted for the fake Anthropic server (test/fakes/anthropic.ts): each
// step answers through the tool the wizard makes the model call, as the real API does with tool_choice.
import { reply, toolUse, type MessagesRequest, type Reply } from '../fakes/anthropic';

export const goal = 'Flag invoices over 1,000 for review and list every invoice in a JSON file';
export const questions = [
  { question: 'Where do the invoices come from?', why: 'to choose the trigger' },
  { question: 'What counts as a large invoice?', why: 'the threshold' },
];
export const instructions = {
  job: 'Read each invoice and route the large ones to a person.',
  success_criteria: 'Every invoice is listed; every invoice over 1,000 is flagged.',
  edge_cases: 'An invoice without an amount is flagged too.',
  triggers: 'Manual and API runs with a JSON list of invoices.',
  tools: 'None beyond the graph.',
  runtime_parameters: 'Threshold: 1,000.',
};
/** A graph the agents API accepts: large invoices flagged, all written to a file. */
export const validAgent = {
  name: 'Invoice triage',
  description: 'Flags large invoices',
  nodes: [
    { kind: 'input', id: 'invoices', format: 'json', next: 'large' },
    {
      kind: 'flag_for_review',
      id: 'large',
      reason: 'over 1,000',
      when: { field: 'amount', op: 'gt', value: 1000 },
      next: 'report',
    },
    { kind: 'output', id: 'report', format: 'json', file_name: 'invoices.json' },
  ],
  sample_input: JSON.stringify([
    { id: 'A-1', amount: 120 },
    { id: 'A-2', amount: 80 },
  ]),
};
/** The same graph with its input node pointing at a node that does not exist. */
export const brokenAgent = {
  ...validAgent,
  nodes: [{ kind: 'input', id: 'invoices', format: 'json', next: 'missing' }, ...validAgent.nodes.slice(1)],
};

const usage = { input_tokens: 1000, output_tokens: 500 };
export const toolOf = (body: MessagesRequest) => (body.tool_choice as { name?: string } | undefined)?.name;

/** The scripted model: answers each wizard step through the tool it is made to call. */
export function wizardModel(workflowAnswers: unknown[], connections: unknown[] = []) {
  let workflowTurn = 0;
  return (body: MessagesRequest): Reply => {
    switch (toolOf(body)) {
      case 'ask_questions':
        return reply([toolUse('ask_questions', { questions })], { usage });
      case 'write_instructions':
        return reply([toolUse('write_instructions', { instructions, connections })], { usage });
      case 'submit_agent':
        return reply([toolUse('submit_agent', workflowAnswers[Math.min(workflowTurn++, workflowAnswers.length - 1)])], {
          usage,
        });
      default:
        return { status: 400, error: { type: 'invalid_request_error', message: 'unexpected request' } };
    }
  };
}
