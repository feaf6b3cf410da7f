// The effects ledger around a call that may act in another system. A call's result is recorded under its key
// (run, item, node[, call]) once it returns, so a retried activity gets that result instead of acting twice; before
// the call, an attempt is recorded, and how it ended: refused by the other system (certainly not done) or without
// an answer (may have acted). Retrying a failed item reads both (db/retries.ts): an item whose effect may have
// happened is not retried. A retried item finds the effects its original item already had and takes their results
// rather than acting again; a test run on past items (dry run) plans its effects instead of performing them.
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { isToolName, toolDefinitions } from '../model/tools';
import type { ToolDefinition } from '../model/tool-definition';

/** How a run's item stands towards other systems. */
export interface ItemEffects {
  /** A test run on past items: nothing acts in another system. */
  dryRun: boolean;
  /** The item this one retries (or replays), whose recorded effects it takes. */
  source?: { runId: string; seq: number };
}

// A run's flags never change once it is opened: read once per run, not once per call (bounded, oldest dropped).
const runFlags = new Map<string, { dryRun: boolean; retry: boolean }>();

export async function itemEffects(knex: Knex, runId: string, seq: number): Promise<ItemEffects> {
  let flags = runFlags.get(runId);
  if (!flags) {
    const run = await knex('runs').where({ id: runId }).first('dry_run', 'retry_of');
    flags = { dryRun: run?.dry_run === true, retry: Boolean(run?.retry_of) };
    if (runFlags.size >= 10_000) runFlags.delete(runFlags.keys().next().value!);
    runFlags.set(runId, flags);
  }
  // Only a retry takes over its source's effects: a test run's source is just where its input came from.
  if (!flags.retry) return { dryRun: flags.dryRun };
  const source = await knex('run_item_sources').where({ run_id: runId, seq }).first('source_run_id', 'source_seq');
  return {
    dryRun: flags.dryRun,
    source: source ? { runId: source.source_run_id, seq: source.source_seq } : undefined,
  };
}

/**
 * Whether a test run must not make this call: a tool that acts in another system (`external`), writes the agent's
 * own state store (`state`, other than reading it), or a connection's tool (an MCP server or REST API can do
 * anything its system does). Reading and writing files of the test run itself is allowed.
 */
export function actsElsewhere(tool: string): boolean {
  if (!isToolName(tool)) return true;
  const def = toolDefinitions[tool] as ToolDefinition;
  if (def.sideEffect === 'state') return tool !== 'state.get';
  return def.sideEffect === 'external';
}

export interface EffectCall {
  key: string;
  runId: string;
  seq: number;
  nodeId: string;
  tool: string;
  /** The key the same call had in the source item, for a retried item. */
  sourceKey?: string;
}

/** The call's recorded result, or its source item's (copied under its own key), or undefined when it has none. */
export async function recordedResult(knex: Knex, call: EffectCall): Promise<{ result: unknown } | undefined> {
  const keys = call.sourceKey ? [call.key, call.sourceKey] : [call.key];
  const rows: { key: string; result: unknown }[] = await knex('effects').whereIn('key', keys).select('key', 'result');
  const own = rows.find((r) => r.key === call.key);
  if (own) return { result: own.result };
  const source = rows.find((r) => r.key === call.sourceKey);
  if (!source) return undefined;
  await knex('effects')
    .insert({ key: call.key, run_id: call.runId, result: JSON.stringify(source.result ?? null) })
    .onConflict('key')
    .ignore();
  return { result: source.result };
}

/** Makes the call once: its recorded result when there is one, else the call, with its attempt in the ledger. */
export async function performOnce(knex: Knex, call: EffectCall, act: () => Promise<unknown>): Promise<unknown> {
  const recorded = await recordedResult(knex, call);
  if (recorded) return recorded.result;
  await knex('effect_attempts')
    .insert({ key: call.key, run_id: call.runId, item_seq: call.seq, node_id: call.nodeId, tool: call.tool })
    .onConflict('key')
    .ignore();
  let result: unknown;
  try {
    result = await act();
  } catch (err) {
    // A non-retryable failure is the other system's (or the arguments') refusal: nothing was done. Anything else
    // (no answer, a timeout, a 5xx) leaves the call in doubt, and a doubt once recorded stays.
    const refused = err instanceof ApplicationFailure && err.nonRetryable === true;
    await knex('effect_attempts')
      .where({ key: call.key })
      .update(refused ? { refused: true, error: errorText(err) } : { uncertain: true, error: errorText(err) });
    throw err;
  }
  await knex('effects')
    .insert({ key: call.key, run_id: call.runId, result: JSON.stringify(result ?? null) })
    .onConflict('key')
    .ignore();
  return result;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

/**
 * A test run's call that would have acted: recorded as a planned effect, and answered with what it would have done
 * so the item goes on as if it had.
 */
export async function planEffect(
  knex: Knex,
  call: Omit<EffectCall, 'sourceKey'> & { arguments: unknown },
): Promise<unknown> {
  await knex('planned_effects')
    .insert({
      key: call.key,
      run_id: call.runId,
      item_seq: call.seq,
      node_id: call.nodeId,
      kind: 'tool',
      tool: call.tool,
      arguments: JSON.stringify(call.arguments ?? null),
      message: `would call ${call.tool}`,
    })
    .onConflict('key')
    .ignore();
  return { planned: true, tool: call.tool, arguments: call.arguments, note: 'test run: this call was not made' };
}

/** A person a test run would have asked (an approval or a review), recorded instead of waiting on them. */
export function wouldAsk(
  runId: string,
  seq: number,
  nodeId: string,
  kind: 'approval' | 'review',
  tool: string | null,
  args: unknown,
  message: string,
) {
  return {
    key: `${runId}:${seq}:${nodeId}:${kind}${tool ? `:${tool}` : ''}`,
    run_id: runId,
    item_seq: seq,
    node_id: nodeId,
    kind,
    tool,
    arguments: JSON.stringify(args ?? null),
    message,
  };
}
