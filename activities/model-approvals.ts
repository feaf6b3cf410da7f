// A model step waiting on reviewers. When the model asks for tool calls the approval policy holds back, the
// step's conversation is saved here (claim check: Postgres, never the Temporal history), each held call gets
// an approval, and the item waits in needs_review. The page workflow waits for the decisions as it does for a
// tool node's, then runs the step again; it resumes from the saved conversation (activities/item-steps.ts).
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import { appendRunLog, refreshRunCounts } from '../db/run-progress';
import type { AgentNode, AgentSpec } from '../model/agent';
import type { GatedCall, ModelCheckpoint, ModelUsage } from './llm-step';

/** A stopped step as saved: its conversation, and what the item already shows and the run already counts. */
export interface SavedModelStep extends ModelCheckpoint {
  /** How many of the item's reasoning entries came before this step. */
  reasoningBefore: number;
  /** The step's usage already added to the run's (at its stops), so it is never counted twice. */
  counted: ModelUsage;
}

const noUsage: ModelUsage = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cost_usd: 0 };

export function usageSince(total: ModelUsage, counted: ModelUsage | undefined): ModelUsage {
  const c = counted ?? noUsage;
  return {
    input_tokens: total.input_tokens - c.input_tokens,
    output_tokens: total.output_tokens - c.output_tokens,
    cache_read_tokens: total.cache_read_tokens - c.cache_read_tokens,
    cost_usd: total.cost_usd - c.cost_usd,
  };
}

/** The saved conversation of a step stopped at this item and node, with the approvals its held calls wait on. */
export async function loadStoppedModelStep(
  knex: Knex,
  runId: string,
  seq: number,
  nodeId: string,
): Promise<{ saved: SavedModelStep; approvals: { id: string; call_id: string }[] } | undefined> {
  const row = await knex('model_checkpoints')
    .where({ run_id: runId, item_seq: seq, node_id: nodeId })
    .first('conversation');
  if (!row) return undefined;
  const saved: SavedModelStep = row.conversation;
  const approvals = await knex('approvals')
    .where({ run_id: runId, item_seq: seq, node_id: nodeId })
    .whereIn(
      'call_id',
      saved.calls.filter((c) => c.gated).map((c) => c.toolUseId),
    )
    .select('id', 'call_id');
  return { saved, approvals };
}

/**
 * Saves a step that stopped for approval and opens one approval per held call, in one transaction, so a retried
 * attempt finds either nothing (and asks the model again) or the whole stop. Returns the approval ids, in the
 * order of the model's calls.
 */
export async function stopModelStepForApproval(
  knex: Knex,
  {
    runId,
    workspaceId,
    seq,
    node,
    spec,
    checkpoint,
    gated,
    reasoningBefore,
    priorReasoning,
    counted,
  }: {
    runId: string;
    workspaceId: string;
    seq: number;
    node: AgentNode;
    spec: AgentSpec;
    checkpoint: ModelCheckpoint;
    gated: GatedCall[];
    reasoningBefore: number;
    priorReasoning: unknown[];
    /** What earlier stops of this step already added to the run's usage. */
    counted: ModelUsage | undefined;
  },
): Promise<string[]> {
  const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
  const saved: SavedModelStep = { ...checkpoint, reasoningBefore, counted: checkpoint.usage };
  return knex.transaction(async (trx) => {
    await trx('model_checkpoints')
      .insert({ run_id: runId, item_seq: seq, node_id: node.id, conversation: JSON.stringify(saved) })
      .onConflict(['run_id', 'item_seq', 'node_id'])
      .merge({ conversation: JSON.stringify(saved), updated_at: trx.fn.now() });
    await trx('approvals')
      .insert(
        gated.map((call) => ({
          id: randomUUID(),
          workspace_id: workspaceId,
          run_id: runId,
          item_seq: seq,
          node_id: node.id,
          call_id: call.toolUseId,
          workflow_id: workflowId,
          tool: call.gated.tool,
          message: `The model asks to call ${call.gated.tool} (step "${node.id}")`,
          arguments: JSON.stringify(call.gated.input),
          timeout_at: new Date(Date.now() + spec.policy.approval_timeout_seconds * 1000),
        })),
      )
      .onConflict(['run_id', 'item_seq', 'node_id', 'call_id'])
      .ignore();
    const approvals: { id: string; call_id: string }[] = await trx('approvals')
      .where({ run_id: runId, item_seq: seq, node_id: node.id })
      .whereIn(
        'call_id',
        gated.map((c) => c.toolUseId),
      )
      .select('id', 'call_id');
    // The reviewer sees why the model asks (its reasoning so far) and what it has cost.
    const moved = await trx('run_items')
      .where({ run_id: runId, seq, node_id: node.id })
      .whereNotIn('status', ['done', 'failed', 'skipped'])
      .update({
        status: 'needs_review',
        reasoning: JSON.stringify([...priorReasoning, ...checkpoint.reasoning]),
        usage: JSON.stringify(checkpoint.usage),
        updated_at: trx.fn.now(),
      });
    if (moved > 0) {
      await addRunUsage(trx, runId, usageSince(checkpoint.usage, counted));
      await appendRunLog(
        trx,
        gated.map((call) => ({
          run_id: runId,
          level: 'info' as const,
          node_id: node.id,
          item_seq: seq,
          message: `${node.id}: the model asks to call ${call.gated.tool}; waiting for a reviewer's approval`,
        })),
      );
    }
    await refreshRunCounts(trx, runId);
    return gated.map((call) => approvals.find((a) => a.call_id === call.toolUseId)!.id);
  });
}

/** Forgets a step's saved conversation once the step has settled. */
export async function dropStoppedModelStep(knex: Knex, runId: string, seq: number, nodeId: string): Promise<void> {
  await knex('model_checkpoints').where({ run_id: runId, item_seq: seq, node_id: nodeId }).delete();
}

async function addRunUsage(trx: Knex.Transaction, runId: string, usage: ModelUsage): Promise<void> {
  await trx.raw(
    `update runs set usage = jsonb_build_object(
       'input_tokens', coalesce((usage->>'input_tokens')::bigint, 0) + :input,
       'output_tokens', coalesce((usage->>'output_tokens')::bigint, 0) + :output,
       'cache_read_tokens', coalesce((usage->>'cache_read_tokens')::bigint, 0) + :cacheRead,
       'cost_usd', coalesce((usage->>'cost_usd')::numeric, 0) + :cost)
     where id = :runId`,
    {
      runId,
      input: usage.input_tokens,
      output: usage.output_tokens,
      cacheRead: usage.cache_read_tokens,
      cost: usage.cost_usd,
    },
  );
}
