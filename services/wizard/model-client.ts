// One structured answer from the model for the creation wizard: the answer comes as the input of a tool the model
// must call (tool_choice), whose JSON Schema is the shape wanted. Runs in the web process: a person waits on each
// step, the calls are short and have no side effects beyond the wizard session, so a workflow would only add a
// round of polling. The SDK retries rate limits and overloads itself.
import type Anthropic from '@anthropic-ai/sdk';
import type { CadreConfig } from '../../cadre.config';
import { modelCostUsd } from '../../model/pricing';
import type { WizardUsage } from '../../db/wizard-sessions';
import { ApiError } from '../errors';

/** The model SDK, loaded on first use: a process that never calls a model does not hold it. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const anthropicSdk = (): typeof import('@anthropic-ai/sdk') => require('@anthropic-ai/sdk');

export type ModelSettings = CadreConfig['model'];

/** Said the same way as a model step says it (activities/llm-step.ts). */
export const noModelMessage = 'no model configured: set ANTHROPIC_API_KEY';

export interface StructuredTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface StructuredTurn {
  /** The tool input the model gave. */
  input: unknown;
  /** The assistant turn as sent back, to continue the conversation (a corrective retry). */
  assistant: Anthropic.MessageParam;
  toolUseId: string;
  usage: WizardUsage;
}

const clients = new Map<string, Anthropic>();
function clientOf(model: ModelSettings): Anthropic {
  const key = `${model.apiKey}|${model.baseUrl ?? ''}`;
  let sdk = clients.get(key);
  if (!sdk)
    clients.set(
      key,
      (sdk = new (anthropicSdk().default)({ apiKey: model.apiKey, baseURL: model.baseUrl, maxRetries: 2 })),
    );
  return sdk;
}

export function requireModel(model: ModelSettings | undefined): ModelSettings {
  if (!model?.apiKey)
    throw new ApiError(
      409,
      'no_model',
      `${noModelMessage} to generate questions, instructions and workflows; meanwhile start from an example or a blank agent`,
    );
  return model;
}

export async function structuredTurn(
  model: ModelSettings,
  system: string,
  messages: Anthropic.MessageParam[],
  tool: StructuredTool,
): Promise<StructuredTurn> {
  let res: Anthropic.Message;
  try {
    res = await clientOf(model).messages.create({
      model: model.name,
      max_tokens: 8192,
      system,
      messages,
      tools: [
        {
          name: tool.name,
          description: tool.description,
          input_schema: tool.inputSchema as Anthropic.Tool.InputSchema,
        },
      ],
      tool_choice: { type: 'tool', name: tool.name },
    });
  } catch (err) {
    const reason = err instanceof anthropicSdk().APIError ? `${err.status ?? ''} ${err.message}`.trim() : String(err);
    throw new ApiError(502, 'model_unavailable', `the model could not answer: ${reason}; try again`);
  }
  const usage: WizardUsage = {
    input_tokens: res.usage.input_tokens + (res.usage.cache_creation_input_tokens ?? 0),
    output_tokens: res.usage.output_tokens,
    cache_read_tokens: res.usage.cache_read_input_tokens ?? 0,
    cost_usd: 0,
  };
  usage.cost_usd = modelCostUsd(model.name, usage);
  const call = res.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use' && b.name === tool.name);
  if (!call)
    throw new ApiError(502, 'model_answer_invalid', `the model did not answer through "${tool.name}"; try again`);
  return {
    input: call.input,
    assistant: { role: 'assistant', content: res.content as Anthropic.ContentBlockParam[] },
    toolUseId: call.id,
    usage,
  };
}

export function addUsage(a: WizardUsage, b: WizardUsage): WizardUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
    cost_usd: a.cost_usd + b.cost_usd,
  };
}
