// Chat Mode's assistant: Claude through @anthropic-ai/sdk, streamed, with the tools of services/chat/tools.ts. It runs in
// the web process, inside the request that asked: a conversation turn is a person waiting on an answer, not durable
// work. Whatever it starts that must survive (a run) goes through the run engine like any other start.
import type Anthropic from '@anthropic-ai/sdk';
import type { ConversationRow, MessageRow, ToolCallRecord, ChatUsage } from '../../db/chat';
import { modelCostUsd } from '../../model/pricing';
import { callChatTool, chatToolDefinitions, type ToolContext } from './tools';

/** The model SDK, loaded on first use: a process that never calls a model does not hold it. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const anthropicSdk = (): typeof import('@anthropic-ai/sdk') => require('@anthropic-ai/sdk');

export interface ModelSettings {
  apiKey?: string;
  baseUrl?: string;
  name: string;
}

/** What the person sees while the answer is made, in order. */
export type ChatEvent =
  | { event: 'text'; data: { text: string } }
  | { event: 'tool_call'; data: { id: string; name: string; input: unknown } }
  | { event: 'tool_result'; data: { id: string; name: string; is_error: boolean; run_ids: string[] } };

export interface Answer {
  text: string;
  turns: Anthropic.MessageParam[];
  tool_calls: ToolCallRecord[];
  run_ids: string[];
  usage: ChatUsage;
}

/** The model failed (refused, unreachable); what is said to the person. */
export class ModelCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const maxTurns = 10;

let client: { key: string; sdk: Anthropic } | undefined;
function anthropic(model: ModelSettings): Anthropic {
  const key = `${model.apiKey}|${model.baseUrl ?? ''}`;
  if (client?.key !== key)
    client = {
      key,
      sdk: new (anthropicSdk().default)({ apiKey: model.apiKey, baseURL: model.baseUrl, maxRetries: 2 }),
    };
  return client.sdk;
}

export function systemPrompt(publicUrl: string, conversation: ConversationRow): string {
  return [
    'You are the assistant of Cadre, a platform for AI agents that run business workflows, in Chat Mode.',
    'You can list and describe agents, start runs with the input the person gives, read runs (status, items, outputs, files, failures), explain runs (node activity, reasoning, cited sources), list pending approvals, approve or reject one only when the person explicitly asks you to, and pause or resume a run only when the person asks you to.',
    `You cannot change configuration, and you have no tool that does: instructions, nodes, tools, triggers, sources, skills, connections and approval behaviour are changed only in the web application, in Operator Mode. When asked to change any of these, say you cannot and give the link: an agent's Operator Mode is ${publicUrl}/agents/<agent id>/edit, its triggers are on ${publicUrl}/agents/<agent id>, connections at ${publicUrl}/integrations, sources at ${publicUrl}/sources, skills at ${publicUrl}/skills.`,
    `Every answer that relies on a run links to it: ${publicUrl}/runs/<run id>. Be brief and concrete.`,
    conversation.agent_id
      ? `This conversation is about the agent "${conversation.agent_name}" (id ${conversation.agent_id}); "the agent" means it unless the person says otherwise.`
      : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** The conversation so far as the model saw it: every stored turn, questions and answers with their tool calls. */
export function historyOf(messages: MessageRow[]): Anthropic.MessageParam[] {
  return messages.flatMap((m) => m.turns as Anthropic.MessageParam[]);
}

/**
 * Answers `question`, streaming its text and tool activity to `emit` as they happen, and gives back the answer to
 * store. Throws ModelCallError when the model cannot answer; nothing is stored then.
 */
export async function answer(opts: {
  model: ModelSettings & { apiKey: string };
  conversation: ConversationRow;
  history: MessageRow[];
  question: string;
  tools: ToolContext;
  emit: (e: ChatEvent) => void;
  /** Aborted when the person goes away: the model call stops. */
  signal: AbortSignal;
}): Promise<Answer> {
  const { model, emit } = opts;
  const sdk = anthropic(model);
  const tools = chatToolDefinitions();
  const system = systemPrompt(opts.tools.deps.links.publicUrl, opts.conversation);
  const messages: Anthropic.MessageParam[] = [...historyOf(opts.history), { role: 'user', content: opts.question }];
  const newTurns = messages.length - 1; // the question's turn and every turn after it belong to this exchange
  const usage: ChatUsage = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cost_usd: 0 };
  const toolCalls: ToolCallRecord[] = [];
  const runIds = new Set<string>();
  let text = '';

  for (let turn = 0; turn < maxTurns; turn++) {
    let res: Anthropic.Message;
    try {
      const stream = sdk.messages.stream(
        { model: model.name, max_tokens: 4096, system, messages, tools },
        { signal: opts.signal },
      );
      stream.on('text', (delta) => {
        text += delta;
        emit({ event: 'text', data: { text: delta } });
      });
      res = await stream.finalMessage();
    } catch (err) {
      throw modelCallError(err);
    }
    usage.input_tokens += res.usage.input_tokens + (res.usage.cache_creation_input_tokens ?? 0);
    usage.cache_read_tokens += res.usage.cache_read_input_tokens ?? 0;
    usage.output_tokens += res.usage.output_tokens;
    usage.cost_usd = modelCostUsd(model.name, usage);
    messages.push({ role: 'assistant', content: res.content });

    const uses = res.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    if (uses.length === 0) break;
    if (text && !/\s$/.test(text)) {
      text += '\n\n'; // the text of the next turn starts a new paragraph, on the page as in the stored answer
      emit({ event: 'text', data: { text: '\n\n' } });
    }
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const use of uses) {
      emit({ event: 'tool_call', data: { id: use.id, name: use.name, input: use.input } });
      const out = await callChatTool(use.name, use.input, opts.tools);
      out.runIds.forEach((id) => runIds.add(id));
      toolCalls.push({
        id: use.id,
        name: use.name,
        input: use.input,
        is_error: out.isError,
        result: out.content.slice(0, 2000),
      });
      emit({ event: 'tool_result', data: { id: use.id, name: use.name, is_error: out.isError, run_ids: out.runIds } });
      results.push({ type: 'tool_result', tool_use_id: use.id, content: out.content, is_error: out.isError });
    }
    messages.push({ role: 'user', content: results });
    if (turn === maxTurns - 1) text += `(stopped after ${maxTurns} steps; ask again to go on)`;
  }
  return {
    text: text.trim(),
    turns: messages.slice(newTurns + 1) as Anthropic.MessageParam[],
    tool_calls: toolCalls,
    run_ids: [...runIds],
    usage,
  };
}

function modelCallError(err: unknown): ModelCallError {
  if (err instanceof anthropicSdk().APIUserAbortError)
    return new ModelCallError(499, 'cancelled', 'the question was cancelled');
  if (!(err instanceof anthropicSdk().APIError) || err.status === undefined) {
    const reason = err instanceof Error ? err.message : String(err);
    return new ModelCallError(503, 'model_unavailable', `the model API call failed: ${reason}`);
  }
  const said = `(${err.status}): ${err.apiMessage ?? err.message}`;
  if (err.status >= 400 && err.status < 500 && err.status !== 429 && err.status !== 408)
    return new ModelCallError(502, 'model_rejected', `the model API refused the request ${said}`);
  return new ModelCallError(503, 'model_unavailable', `the model API is unavailable ${said}; try again shortly`);
}
