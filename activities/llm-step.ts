// A model step: a tool-use loop with Claude through @anthropic-ai/sdk. The agent's instructions and the node's
// instructions form a cached system prompt shared by every item of a run; the item is the user turn. With an
// output schema the model answers through a `submit_output` tool whose input is validated, with one retry.
import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { Ajv } from 'ajv';
import { z } from 'zod';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentNode, AgentSpec } from '../workflows/agent-model';
import type { ItemData } from '../workflows/interpreter';
import { isToolName, toolDefinitions } from './tools/definitions';
import { externalToolHandlers } from './tools/handlers';
import { approvalRequired } from './page-advance';
import { runFileSaver } from './run-files';
import type { ActivityDeps } from './deps';
import { sourcesToolFor } from './sources/llm-tool';

export interface ModelStepResult {
  output: unknown;
  reasoning: {
    node: string;
    type: 'text' | 'tool_call' | 'tool_result';
    text?: string;
    tool?: string;
    input?: unknown;
    output?: unknown;
  }[];
  usage: { input_tokens: number; output_tokens: number; cache_read_tokens: number; cost_usd: number };
}

// USD per million tokens (input, output), by model family; cache reads cost a tenth of input.
const prices: [RegExp, number, number][] = [
  [/haiku/, 1, 5],
  [/opus-4-[01]|opus-3/, 15, 75],
  [/opus/, 5, 25],
  [/sonnet/, 3, 15],
];

export const noModelMessage = 'no model configured: set ANTHROPIC_API_KEY';
const maxTurns = 8;
const submitTool = 'submit_output';
const ajv = new Ajv({ allErrors: true, strict: false });

let client: { key: string; sdk: Anthropic } | undefined;
function anthropic(apiKey: string, baseURL?: string): Anthropic {
  const key = `${apiKey}|${baseURL ?? ''}`;
  if (client?.key !== key) client = { key, sdk: new Anthropic({ apiKey, baseURL, maxRetries: 2 }) };
  return client.sdk;
}

/** Tool names the API accepts: letters, digits, "_" and "-". */
const wireName = (tool: string) => tool.replace(/\./g, '_');

export async function runModelStep({
  deps,
  spec,
  node,
  data,
  runId,
  seq,
}: {
  deps: ActivityDeps;
  spec: AgentSpec;
  node: Extract<AgentNode, { kind: 'llm' }>;
  data: ItemData;
  runId: string;
  seq: number;
}): Promise<ModelStepResult> {
  const { config } = deps;
  if (!config.model.apiKey) throw ApplicationFailure.nonRetryable(noModelMessage, 'NoModel');
  const sdk = anthropic(config.model.apiKey, config.model.baseUrl);

  const toolNames = node.tools.filter(isToolName);
  const tools: Anthropic.Tool[] = toolNames.map((name) => ({
    name: wireName(name),
    description: toolDefinitions[name].description,
    input_schema: z.toJSONSchema(toolDefinitions[name].input, { io: 'input' }) as Anthropic.Tool.InputSchema,
  }));
  const sources = sourcesToolFor(spec);
  if (sources) tools.push(sources.definition);
  const validate = node.output_schema ? ajv.compile(node.output_schema) : undefined;
  if (node.output_schema) {
    tools.push({
      name: submitTool,
      description: 'Submit the final answer for this item. Call it exactly once, when done.',
      input_schema: { type: 'object', ...node.output_schema } as Anthropic.Tool.InputSchema,
    });
  }
  const system: Anthropic.TextBlockParam[] = [
    {
      type: 'text',
      text: [
        spec.instructions,
        `Step "${node.id}": ${node.instructions}`,
        sources?.instructions ?? '',
        node.output_schema ? `When done, call ${submitTool} with the answer.` : '',
      ]
        .filter(Boolean)
        .join('\n\n'),
      cache_control: { type: 'ephemeral' }, // shared by every item of the run
    },
  ];
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: `Item:\n${JSON.stringify(data, null, 2)}` }];
  const reasoning: ModelStepResult['reasoning'] = [];
  const usage = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cost_usd: 0 };
  const [, inPrice, outPrice] = prices.find(([re]) => re.test(config.model.name)) ?? prices[prices.length - 1];
  let schemaRetries = 0;
  // A failure carries what the step used and said so far: the item's usage counts in the run's cost, and its
  // reasoning shows why it failed.
  const failure = (message: string, type: string, nonRetryable: boolean) =>
    ApplicationFailure.create({ message, type, nonRetryable, details: [{ usage, reasoning }] });

  for (let turn = 0; turn < maxTurns; turn++) {
    let res: Anthropic.Message;
    try {
      res = await sdk.messages.create({
        model: config.model.name,
        max_tokens: 4096,
        system,
        messages,
        tools: tools.length ? tools : undefined,
      });
    } catch (err) {
      if (!(err instanceof Anthropic.APIError) || err.status === undefined) {
        // unreachable ("Connection error."), timed out, or an unreadable answer: retried, and named as the model's
        const reason = err instanceof Error ? err.message : String(err);
        throw failure(`the model API call failed: ${reason}`, 'ModelUnavailable', false);
      }
      // The SDK's own message embeds the raw JSON body; the item's error should read like the API's answer.
      const said = `(${err.status}): ${err.apiMessage ?? err.message}`;
      if (err.status >= 400 && err.status < 500 && err.status !== 429 && err.status !== 408) {
        throw failure(`the model API refused the request ${said}`, 'ModelRejected', true);
      }
      // 429, 5xx, 529 overloaded: retried by the SDK, then by Temporal
      throw failure(`the model API is unavailable ${said}`, 'ModelUnavailable', false);
    }
    usage.input_tokens += res.usage.input_tokens + (res.usage.cache_creation_input_tokens ?? 0);
    usage.cache_read_tokens += res.usage.cache_read_input_tokens ?? 0;
    usage.output_tokens += res.usage.output_tokens;
    usage.cost_usd =
      (usage.input_tokens * inPrice + usage.cache_read_tokens * inPrice * 0.1 + usage.output_tokens * outPrice) / 1e6;
    messages.push({ role: 'assistant', content: res.content });

    const results: Anthropic.ToolResultBlockParam[] = [];
    let text = '';
    for (const block of res.content) {
      if (block.type === 'text') {
        text += block.text;
        reasoning.push({ node: node.id, type: 'text', text: block.text });
      } else if (block.type === 'tool_use') {
        reasoning.push({ node: node.id, type: 'tool_call', tool: block.name, input: block.input });
        if (block.name === submitTool && validate) {
          if (validate(block.input)) return { output: block.input, reasoning, usage };
          const problems = ajv.errorsText(validate.errors);
          if (schemaRetries++ >= 1) {
            throw failure(`the model's answer does not match the output schema: ${problems}`, 'SchemaViolation', true);
          }
          results.push({
            type: 'tool_result',
            tool_use_id: block.id,
            is_error: true,
            content: `Invalid output: ${problems}. Call ${submitTool} again with a valid answer.`,
          });
          continue;
        }
        if (sources && block.name === sources.definition.name) {
          // A search changes nothing: it needs no idempotency key or effects ledger.
          const found = await sources.call(block.input, { deps, runId, seq, nodeId: node.id }).then(
            (content) => ({ content, is_error: false }),
            (err: unknown) => ({ content: err instanceof Error ? err.message : String(err), is_error: true }),
          );
          reasoning.push({ node: node.id, type: 'tool_result', tool: block.name, output: found.content });
          results.push({ type: 'tool_result', tool_use_id: block.id, ...found });
          continue;
        }
        const tool = toolNames.find((t) => wireName(t) === block.name);
        let content: string;
        let isError = false;
        try {
          if (!tool) throw new Error(`unknown tool ${block.name}`);
          const handler = externalToolHandlers[tool] as ((i: unknown, c: unknown) => Promise<unknown>) | undefined;
          if (!handler) throw new Error(`${tool} can only be used from a tool node`);
          const input = toolDefinitions[tool].input.parse(block.input);
          // A call the policy sends to a reviewer never runs from inside a model step (the API refuses such
          // agents when they are saved; this guards agents saved before that rule).
          if (approvalRequired(spec, tool, input))
            throw new Error(`${tool} with these arguments needs a reviewer's approval; use a tool node for it`);
          // Attempt-independent (the model's tool_use ids change on every attempt) and recorded in the effects
          // ledger, so a retried activity repeating the same call gets the recorded result instead of acting twice.
          const digest = createHash('sha256').update(JSON.stringify(input)).digest('hex').slice(0, 16);
          const key = `${runId}:${seq}:${node.id}:${tool}:${digest}`;
          const recorded = await deps.knex('effects').where({ key }).first('result');
          let out = recorded?.result;
          if (!recorded) {
            out = await handler(input, {
              idempotencyKey: key,
              http: config.http,
              smtp: config.smtp,
              saveFile: runFileSaver(deps.knex, runId, key),
            });
            await deps
              .knex('effects')
              .insert({ key, run_id: runId, result: JSON.stringify(out ?? null) })
              .onConflict('key')
              .ignore();
          }
          content = JSON.stringify(out);
        } catch (err) {
          isError = true;
          content = err instanceof Error ? err.message : String(err);
        }
        reasoning.push({ node: node.id, type: 'tool_result', tool: block.name, output: content });
        results.push({ type: 'tool_result', tool_use_id: block.id, content, is_error: isError });
      }
    }
    if (results.length > 0) {
      messages.push({ role: 'user', content: results });
      continue;
    }
    if (validate) {
      if (schemaRetries++ >= 1)
        throw failure(`the model did not call ${submitTool} with an answer`, 'SchemaViolation', true);
      messages.push({ role: 'user', content: `Call ${submitTool} with your answer.` });
      continue;
    }
    return { output: { text }, reasoning, usage };
  }
  throw failure(`the model did not finish within ${maxTurns} turns`, 'TooManyTurns', true);
}
