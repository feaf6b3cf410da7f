// A model step: a tool-use loop with Claude through @anthropic-ai/sdk. The agent's instructions and the node's
// instructions form a cached system prompt shared by every item of a run; the item is the user turn. With an
// output schema the model answers through a `submit_output` tool whose input is validated, with one retry.
// Tool calls follow the agent's approval policy: when the model asks for a call a reviewer must approve, the
// step stops after that turn and hands back its conversation (a checkpoint the caller saves), and a later
// activity resumes it with the reviewers' decisions.
import { createHash } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import { Ajv } from 'ajv';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentNode, AgentSpec } from '../model/agent';
import type { ItemData } from '../model/interpreter';
import { approvalRequired } from './page-walk';
import { actsElsewhere, itemEffects, performOnce, planEffect, wouldAsk } from './effects-ledger';
import { modelCostUsd } from '../model/pricing';
import { resolveTools, type StepTool } from './tools/resolve';
import { toolContext } from './tools/context';
import type { ActivityDeps } from './deps';
import { sourcesToolFor } from './sources/llm-tool';
import { loadSkillContext } from './skills/context';
import type { Decision } from './step-results';
import { inSpan } from '../services/telemetry/tracing';
import { toolSpanAttributes } from './tools/tool-span';

/** The model SDK, loaded on first use: a process that never calls a model does not hold it. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const anthropicSdk = (): typeof import('@anthropic-ai/sdk') => require('@anthropic-ai/sdk');

export type ModelUsage = { input_tokens: number; output_tokens: number; cache_read_tokens: number; cost_usd: number };

export interface ReasoningStep {
  node: string;
  type: 'text' | 'tool_call' | 'tool_result' | 'approval';
  text?: string;
  tool?: string;
  input?: unknown;
  output?: unknown;
}

export interface ModelStepResult {
  output: unknown;
  reasoning: ReasoningStep[];
  usage: ModelUsage;
}

/** One tool_use block of the model's last turn: answered already, or waiting on a reviewer. */
export interface TurnCall {
  toolUseId: string;
  /** The name the model used (the wire name). */
  name: string;
  result?: Anthropic.ToolResultBlockParam;
  gated?: { tool: string; input: Record<string, unknown> };
}

/** A model step stopped for approval: everything needed to go on, as JSON (saved in Postgres, not in Temporal). */
export interface ModelCheckpoint {
  /** The conversation up to and including the assistant turn whose tool calls wait. */
  messages: Anthropic.MessageParam[];
  calls: TurnCall[];
  reasoning: ReasoningStep[];
  usage: ModelUsage;
  /** Model turns taken so far. */
  turns: number;
  schemaRetries: number;
}

export type GatedCall = TurnCall & { gated: NonNullable<TurnCall['gated']> };

export type ModelStepOutcome =
  { kind: 'done'; result: ModelStepResult } | { kind: 'paused'; checkpoint: ModelCheckpoint; gated: GatedCall[] };

export const noModelMessage = 'no model configured: set ANTHROPIC_API_KEY';
const maxTurns = 8;
const submitTool = 'submit_output';
const ajv = new Ajv({ allErrors: true, strict: false });

let client: { key: string; sdk: Anthropic } | undefined;
function anthropic(apiKey: string, baseURL?: string): Anthropic {
  const key = `${apiKey}|${baseURL ?? ''}`;
  if (client?.key !== key) client = { key, sdk: new (anthropicSdk().default)({ apiKey, baseURL, maxRetries: 2 }) };
  return client.sdk;
}

/** Tool names the API accepts: letters, digits, "_" and "-", at most 64 (an MCP server's names may be longer). */
function wireName(tool: string): string {
  const name = tool.replace(/[^A-Za-z0-9_-]/g, '_');
  if (name.length <= 64) return name;
  return `${name.slice(0, 55)}_${createHash('sha256').update(tool).digest('hex').slice(0, 8)}`;
}

export async function runModelStep({
  deps,
  spec,
  node,
  data,
  runId,
  seq,
  resume,
}: {
  deps: ActivityDeps;
  spec: AgentSpec;
  node: Extract<AgentNode, { kind: 'llm' }>;
  data: ItemData;
  runId: string;
  seq: number;
  /** A step that stopped for approval, and the reviewers' decisions by tool_use id. */
  resume?: { checkpoint: ModelCheckpoint; decisions: ReadonlyMap<string, Decision> };
}): Promise<ModelStepOutcome> {
  const { config } = deps;
  if (!config.model.apiKey) throw ApplicationFailure.nonRetryable(noModelMessage, 'NoModel');
  const sdk = anthropic(config.model.apiKey, config.model.baseUrl);

  const stepTools = await resolveTools(node.tools, deps, { runId, connections: spec.connections }, { forModel: true });
  const tools: Anthropic.Tool[] = stepTools.map((t) => ({
    name: wireName(t.name),
    description: t.description,
    input_schema: t.inputSchema,
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
  // Skills come first: the same for every item of the run, inside the cached prefix.
  const skills = await loadSkillContext({
    deps,
    spec,
    tools: stepTools.map((t) => t.name),
    runId,
    seq,
    nodeId: node.id,
  });
  const system: Anthropic.TextBlockParam[] = [
    ...(skills ? [skills] : []),
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
  const saved = resume?.checkpoint;
  const messages: Anthropic.MessageParam[] = saved
    ? [...saved.messages]
    : [{ role: 'user', content: `Item:\n${JSON.stringify(data, null, 2)}` }];
  const reasoning: ReasoningStep[] = saved ? [...saved.reasoning] : [];
  const usage: ModelUsage = saved
    ? { ...saved.usage }
    : { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cost_usd: 0 };
  let schemaRetries = saved?.schemaRetries ?? 0;
  // A failure carries what the step used and said so far: the item's usage counts in the run's cost, and its
  // reasoning shows why it failed.
  const failure = (message: string, type: string, nonRetryable: boolean) =>
    ApplicationFailure.create({ message, type, nonRetryable, details: [{ usage, reasoning }] });

  /**
   * Runs a tool call the policy lets through (or a reviewer approved). The key is attempt-independent (the
   * model's tool_use ids change on every attempt) and recorded in the effects ledger, so a retried activity
   * repeating the same call gets the recorded result instead of acting twice.
   */
  const callTool = async (tool: StepTool, input: Record<string, unknown>): Promise<unknown> => {
    const digest = createHash('sha256').update(JSON.stringify(input)).digest('hex').slice(0, 16);
    const key = `${runId}:${seq}:${node.id}:${tool.name}:${digest}`;
    const effects = await itemEffects(deps.knex, runId, seq);
    const source = effects.source;
    const call = {
      key,
      runId,
      seq,
      nodeId: node.id,
      tool: tool.name,
      sourceKey: source && `${source.runId}:${source.seq}:${node.id}:${tool.name}:${digest}`,
    };
    if (effects.dryRun && actsElsewhere(tool.name)) return planEffect(deps.knex, { ...call, arguments: input });
    return performOnce(deps.knex, call, () =>
      inSpan(`execute_tool ${tool.name}`, toolSpanAttributes(tool.name, runId, seq), () =>
        tool.call!(input, toolContext(deps, { runId, key, connections: spec.connections })),
      ),
    );
  };
  /** A test run asks no one: the call a reviewer would have been asked about is recorded, and goes on. */
  const wouldAskFirst = async (tool: StepTool, input: Record<string, unknown>): Promise<boolean> => {
    if (!(await itemEffects(deps.knex, runId, seq)).dryRun) return false;
    await deps
      .knex('planned_effects')
      .insert(wouldAsk(runId, seq, node.id, 'approval', tool.name, input, `would ask a reviewer before ${tool.name}`))
      .onConflict('key')
      .ignore();
    return true;
  };
  const answered = (call: { toolUseId: string; name: string }, content: string, isError: boolean) => {
    reasoning.push({ node: node.id, type: 'tool_result', tool: call.name, output: content });
    return { type: 'tool_result' as const, tool_use_id: call.toolUseId, content, is_error: isError };
  };

  /** The reviewer's decision on a call the model asked for: run it (perhaps with edited arguments), or say no. */
  const decided = async (call: GatedCall, decision: Decision) => {
    const tool = stepTools.find((t) => t.name === call.gated.tool);
    const by = `${decision.by}${decision.reason ? `: ${decision.reason}` : ''}`;
    if (!decision.approved) {
      reasoning.push({ node: node.id, type: 'approval', tool: call.name, text: `rejected by ${by}` });
      return answered(
        call,
        `A reviewer rejected this call (rejected by ${by}), so it was not made. Do not ask for it again; go on without it.`,
        true,
      );
    }
    const edited = decision.arguments !== undefined;
    reasoning.push({
      node: node.id,
      type: 'approval',
      tool: call.name,
      text: `approved by ${by}${edited ? ' with edited arguments' : ''}`,
      ...(edited ? { input: decision.arguments } : {}),
    });
    try {
      if (!tool) throw new Error(`the step no longer offers ${call.gated.tool}`);
      const input = edited ? tool.parse(decision.arguments) : call.gated.input;
      const out = JSON.stringify(await callTool(tool, input));
      return answered(
        call,
        edited
          ? `A reviewer changed the arguments before the call; it was made with ${JSON.stringify(input)}. Result: ${out}`
          : out,
        false,
      );
    } catch (err) {
      return answered(call, err instanceof Error ? err.message : String(err), true);
    }
  };

  let turn = saved?.turns ?? 0;
  if (saved) {
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const call of saved.calls) {
      if (call.result) results.push(call.result);
      else if (call.gated) {
        const decision = resume!.decisions.get(call.toolUseId);
        if (!decision) throw new Error(`no decision for the model's call ${call.toolUseId}`);
        results.push(await decided({ ...call, gated: call.gated }, decision));
      }
    }
    messages.push({ role: 'user', content: results });
  }

  for (; turn < maxTurns; turn++) {
    let res: Anthropic.Message;
    try {
      // A GenAI span (OpenTelemetry's conventions) with the model and the tokens, never the prompt or the answer.
      res = await inSpan(
        `chat ${config.model.name}`,
        {
          'gen_ai.system': 'anthropic',
          'gen_ai.operation.name': 'chat',
          'gen_ai.request.model': config.model.name,
          'gen_ai.request.max_tokens': 4096,
          'cadre.run.id': runId,
          'cadre.item.seq': seq,
          'cadre.node.id': node.id,
        },
        async (span) => {
          const answer = await sdk.messages.create({
            model: config.model.name,
            max_tokens: 4096,
            system,
            messages,
            tools: tools.length ? tools : undefined,
          });
          span.setAttributes({
            'gen_ai.response.model': answer.model,
            'gen_ai.response.id': answer.id,
            'gen_ai.usage.input_tokens':
              answer.usage.input_tokens +
              (answer.usage.cache_creation_input_tokens ?? 0) +
              (answer.usage.cache_read_input_tokens ?? 0),
            'gen_ai.usage.output_tokens': answer.usage.output_tokens,
            'gen_ai.response.finish_reasons': answer.stop_reason ? [answer.stop_reason] : undefined,
          });
          return answer;
        },
        { kind: 'client' },
      );
    } catch (err) {
      if (!(err instanceof anthropicSdk().APIError) || err.status === undefined) {
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
    usage.cost_usd = modelCostUsd(config.model.name, usage);
    messages.push({ role: 'assistant', content: res.content });

    const calls: TurnCall[] = [];
    let text = '';
    for (const block of res.content) {
      if (block.type === 'text') {
        text += block.text;
        reasoning.push({ node: node.id, type: 'text', text: block.text });
      } else if (block.type === 'tool_use') {
        reasoning.push({ node: node.id, type: 'tool_call', tool: block.name, input: block.input });
        const call: TurnCall = { toolUseId: block.id, name: block.name };
        calls.push(call);
        if (block.name === submitTool && validate) {
          if (validate(block.input)) return { kind: 'done', result: { output: block.input, reasoning, usage } };
          const problems = ajv.errorsText(validate.errors);
          if (schemaRetries++ >= 1) {
            throw failure(`the model's answer does not match the output schema: ${problems}`, 'SchemaViolation', true);
          }
          call.result = {
            type: 'tool_result',
            tool_use_id: block.id,
            is_error: true,
            content: `Invalid output: ${problems}. Call ${submitTool} again with a valid answer.`,
          };
          continue;
        }
        if (sources && block.name === sources.definition.name) {
          // A search changes nothing: it needs no idempotency key or effects ledger.
          call.result = await sources.call(block.input, { deps, runId, seq, nodeId: node.id }).then(
            (content) => answered(call, content, false),
            (err: unknown) => answered(call, err instanceof Error ? err.message : String(err), true),
          );
          continue;
        }
        const tool = stepTools.find((t) => wireName(t.name) === block.name);
        try {
          if (!tool) throw new Error(`unknown tool ${block.name}`);
          if (!tool.call) throw new Error(`${tool.name} can only be used from a tool node`);
          const input = tool.parse(block.input);
          // The same policy as tool nodes: such a call waits for a reviewer once this turn is through.
          if (approvalRequired(spec, tool.name, input) && !(await wouldAskFirst(tool, input)))
            call.gated = { tool: tool.name, input };
          else call.result = answered(call, JSON.stringify(await callTool(tool, input)), false);
        } catch (err) {
          call.result = answered(call, err instanceof Error ? err.message : String(err), true);
        }
      }
    }
    const gated = calls.filter((c): c is GatedCall => c.gated !== undefined);
    if (gated.length > 0) {
      return {
        kind: 'paused',
        checkpoint: { messages, calls, reasoning, usage, turns: turn + 1, schemaRetries },
        gated,
      };
    }
    if (calls.length > 0) {
      messages.push({ role: 'user', content: calls.map((c) => c.result!) });
      continue;
    }
    if (validate) {
      if (schemaRetries++ >= 1)
        throw failure(`the model did not call ${submitTool} with an answer`, 'SchemaViolation', true);
      messages.push({ role: 'user', content: `Call ${submitTool} with your answer.` });
      continue;
    }
    return { kind: 'done', result: { output: { text }, reasoning, usage } };
  }
  throw failure(`the model did not finish within ${maxTurns} turns`, 'TooManyTurns', true);
}
