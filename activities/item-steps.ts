// One per-item step: an external tool call, an approval gate, or a model step. Idempotent: the effects ledger
// records each side effect under (run, item, node), so a retried activity or a restarted worker returns the
// recorded result instead of acting twice. A model step whose tool calls need a reviewer stops, and is run
// again with the decisions (activities/model-approvals.ts).
import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import { ApplicationFailure } from '@temporalio/common';
import { applyStateOps } from '../db/state-store';
import type { AgentNode } from '../model/agent';
import { nextNodeId, render, saveResult, type ItemData } from '../model/interpreter';
import { stateOpFor } from './page-walk';
import { ActivityDeps, loadSpec, nodeById } from './deps';
import { runModelStep, type ModelStepResult } from './llm-step';
import { checkCitations } from './sources/citations';
import { dropStoppedModelStep, loadStoppedModelStep, stopModelStepForApproval, usageSince } from './model-approvals';
import { toolContext } from './tools/context';
import { resolveTools } from './tools/resolve';
import { actsElsewhere, itemEffects, performOnce, planEffect, recordedResult } from './effects-ledger';
import { runRetrieveStep } from './sources/retrieve-step';
import { recordModelUsage, stepDuration } from '../services/telemetry/metrics';
import { addActiveSpanEvent, inSpan } from '../services/telemetry/tracing';
import { toolSpanAttributes } from './tools/tool-span';
import type { Decision, StepResult } from './step-results';

function isPermanent(err: unknown): boolean {
  if (err instanceof ApplicationFailure) return err.nonRetryable === true;
  return err instanceof Error && err.name === 'ZodError';
}

export function createItemStepActivities(deps: ActivityDeps) {
  const { knex, config } = deps;

  async function callTool(
    node: Extract<AgentNode, { kind: 'tool' }>,
    args: Record<string, unknown>,
    run: { runId: string; agentId: string; seq: number },
    key: string,
    connections: readonly string[],
  ) {
    const { runId, agentId, seq } = run;
    const effects = await itemEffects(knex, runId, seq);
    const call = {
      key,
      runId,
      seq,
      nodeId: node.id,
      tool: node.tool,
      sourceKey: effects.source && `${effects.source.runId}:${effects.source.seq}:${node.id}`,
    };
    const stateOp = stateOpFor(node, args);
    if (stateOp) {
      if (effects.dryRun && stateOp.op !== 'get') return planEffect(knex, { ...call, arguments: args });
      const recorded = await recordedResult(knex, call);
      if (recorded) return recorded.result;
      return knex.transaction(async (trx) => {
        const [result] = await applyStateOps(trx, agentId, [stateOp]);
        await trx('effects').insert({ key, run_id: runId, result: JSON.stringify(result ?? null) });
        return result;
      });
    }
    const resolved = await resolveTools([node.tool], deps, { runId, connections });
    const tool = resolved.length === 1 ? resolved[0] : undefined; // a tool node calls one tool, not a whole server
    if (!tool?.call) throw ApplicationFailure.nonRetryable(`unknown tool "${node.tool}"`, 'UnknownTool');
    const input = tool.parse(args);
    if (effects.dryRun && actsElsewhere(node.tool)) return planEffect(knex, { ...call, arguments: input });
    const toolCall = tool.call;
    return performOnce(knex, call, () =>
      inSpan(`execute_tool ${tool.name}`, toolSpanAttributes(tool.name, runId, seq), () =>
        toolCall(input, toolContext(deps, { runId, key, connections })),
      ),
    );
  }

  return {
    async executeStep({
      runId,
      agentId,
      agentVersion,
      seq,
      nodeId,
      decision,
      decisions,
      maxAttempts,
      modelUnavailableRetries = 0,
    }: {
      runId: string;
      agentId: string;
      agentVersion: number;
      seq: number;
      nodeId: string;
      decision?: Decision;
      /** A model step's decisions on the tool calls it stopped for, by approval id. */
      decisions?: Record<string, Decision>;
      maxAttempts: number;
      modelUnavailableRetries?: number;
    }): Promise<StepResult> {
      const spec = await loadSpec(knex, agentId, agentVersion);
      const node = nodeById(spec, nodeId);
      const item = await knex('run_items')
        .where({ run_id: runId, seq })
        .first('status', 'data', 'node_id', 'reasoning');
      if (!item || item.node_id !== nodeId || ['done', 'failed', 'skipped'].includes(item.status))
        return 'already_done';

      // A model step that stopped for approval: its saved conversation, what it already wrote to the item (its
      // reasoning so far) and to the run (its usage so far).
      // Only a step that stopped can have one: it comes back with decisions, or (a retry of the attempt that
      // stopped) finds its item waiting; the common first run of a step costs no lookup.
      const mayHaveStopped = decisions !== undefined || item.status === 'needs_review';
      const stopped =
        node.kind === 'llm' && mayHaveStopped ? await loadStoppedModelStep(knex, runId, seq, nodeId) : undefined;
      const priorReasoning = ((item.reasoning as unknown[] | null) ?? []).slice(
        0,
        stopped?.saved.reasoningBefore ?? Infinity,
      );
      const counted = stopped?.saved.counted;
      const began = performance.now();

      const settle = async (
        patch: ItemPatch,
        outcome: 'done' | 'failed',
        log?: string,
        usage?: ModelStepResult['usage'],
      ) => {
        const runUsage = usage && usageSince(usage, counted);
        const moved = await settleItem(knex, { runId, seq, node, patch, outcome, log, usage, runUsage });
        if (moved) {
          stepDuration.observe({ kind: node.kind, outcome }, (performance.now() - began) / 1000);
          if (runUsage) recordModelUsage(agentId, config.model.name, runUsage);
        }
        if (stopped) await dropStoppedModelStep(knex, runId, seq, nodeId);
      };

      if (decision && !decision.approved) {
        const why = `rejected by ${decision.by}${decision.reason ? `: ${decision.reason}` : ''}`;
        await settle({ status: 'skipped', error: why }, 'done', `${node.id}: ${why}`);
        return 'skipped';
      }

      const data: ItemData = item.data;
      const key = `${runId}:${seq}:${nodeId}`;
      try {
        let next: ItemData = data;
        let reasoning: unknown = item.reasoning;
        let usage: ModelStepResult['usage'] | undefined;
        if (node.kind === 'tool') {
          const args = decision?.arguments ?? (render(node.arguments, data) as Record<string, unknown>);
          next = saveResult(
            data,
            node.save_as,
            await callTool(node, args, { runId, agentId, seq }, key, spec.connections),
          );
        } else if (node.kind === 'llm') {
          let resume: Parameters<typeof runModelStep>[0]['resume'];
          if (stopped) {
            const byCall = new Map<string, Decision>();
            for (const a of stopped.approvals) if (decisions?.[a.id]) byCall.set(a.call_id, decisions[a.id]);
            // A retry of the attempt that stopped, before the workflow heard of it: nothing is decided yet.
            if (byCall.size < stopped.approvals.length) return { awaiting: stopped.approvals.map((a) => a.id) };
            resume = { checkpoint: stopped.saved, decisions: byCall };
          }
          const step = await runModelStep({ deps, spec, node, data, runId, seq, resume });
          if (step.kind === 'paused') {
            const run = await knex('runs').where({ id: runId }).first('workspace_id');
            const awaiting = await stopModelStepForApproval(knex, {
              runId,
              workspaceId: run.workspace_id,
              seq,
              node,
              spec,
              checkpoint: step.checkpoint,
              gated: step.gated,
              reasoningBefore: priorReasoning.length,
              priorReasoning,
              counted,
            });
            // What the stop added to the run's usage (stopModelStepForApproval), counted once like the run's.
            recordModelUsage(agentId, config.model.name, usageSince(step.checkpoint.usage, counted));
            return { awaiting };
          }
          const output = await checkCitations(knex, { runId, seq, nodeId: node.id, output: step.result.output });
          next = saveResult(data, node.save_as, output);
          reasoning = [...priorReasoning, ...step.result.reasoning];
          usage = step.result.usage;
        } else if (node.kind === 'retrieve') {
          next = saveResult(data, node.save_as, await runRetrieveStep({ deps, spec, node, data, runId, seq }));
        } else if (node.kind === 'approval') {
          // "Approve with edits": the gate asked about the item's data, so the item goes on with the edited fields.
          if (decision?.arguments) next = { ...data, ...decision.arguments };
        } else {
          throw ApplicationFailure.nonRetryable(
            `"${node.kind}" nodes are not available in this version of Cadre`,
            'Unsupported',
          );
        }
        const following = nextNodeId(node, next);
        await settle(
          {
            status: following ? 'pending' : 'done',
            data: next,
            node_id: following,
            reasoning: reasoning === undefined || reasoning === null ? null : JSON.stringify(reasoning),
          },
          'done',
          undefined,
          usage,
        );
        return 'advanced';
      } catch (err) {
        const attempt = Context.current().info.attempt;
        // The model API being unavailable is not the item's fault: it has its own, slower retries on top.
        if (
          err instanceof ApplicationFailure &&
          err.type === 'ModelUnavailable' &&
          attempt < maxAttempts + modelUnavailableRetries
        ) {
          const wait = Math.min(600, config.model.retrySeconds * 2 ** (attempt - 1));
          throw ApplicationFailure.create({
            message: err.message,
            type: 'ModelUnavailable',
            details: err.details ? [...err.details] : undefined,
            nextRetryDelay: `${wait} seconds`,
          });
        }
        if (!isPermanent(err) && attempt < maxAttempts) throw err; // Temporal retries with backoff
        const message = err instanceof Error ? err.message : String(err);
        // A model step that failed still used tokens (and said why): both are kept with the item.
        const spent =
          err instanceof ApplicationFailure ? (err.details?.[0] as Partial<ModelStepResult> | undefined) : undefined;
        await settle(
          {
            status: 'failed',
            error: `${node.id}: ${message}`,
            ...(spent?.reasoning?.length ? { reasoning: JSON.stringify([...priorReasoning, ...spent.reasoning]) } : {}),
          },
          'failed',
          `${node.id} failed after ${attempt} attempt(s): ${message}`,
          spent?.usage,
        );
        addActiveSpanEvent('item failed', {
          'cadre.item.seq': seq,
          'cadre.node.id': node.id,
          'error.message': message,
        });
        return 'failed';
      }
    },
  };
}

/** What a settled step changes on its item. */
export interface ItemPatch {
  status: 'pending' | 'done' | 'failed' | 'skipped';
  error?: string;
  data?: unknown;
  node_id?: string | null;
  /** The item's reasoning so far, as JSON text. */
  reasoning?: string | null;
}

/**
 * Moves an item past a per-item step (or fails it) with its node activity, log line, usage and the run's
 * counters, in one statement: many items settle every second, and a single statement neither holds the
 * embedded database for a transaction's round trips nor needs one to stay atomic. Guarded by the node the
 * item stands at, so a retried attempt cannot count the item twice.
 */
export async function settleItem(
  knex: Knex,
  {
    runId,
    seq,
    node,
    patch,
    outcome,
    log,
    usage,
    runUsage = usage,
  }: {
    runId: string;
    seq: number;
    node: AgentNode;
    patch: ItemPatch;
    outcome: 'done' | 'failed';
    log?: string;
    /** The item's usage for this step. */
    usage?: ModelStepResult['usage'];
    /** What it adds to the run's: less than `usage` when the step's stops already counted some of it. */
    runUsage?: ModelStepResult['usage'];
  },
): Promise<boolean> {
  const sets = ['status = :status', 'updated_at = now()'];
  if ('error' in patch) sets.push('error = :error');
  if ('data' in patch) sets.push('data = :data::jsonb');
  if ('node_id' in patch) sets.push('node_id = :nodeId');
  if ('reasoning' in patch) sets.push('reasoning = :reasoning::jsonb');
  if (usage) sets.push('usage = :usage::jsonb');
  // Counted incrementally: recounting the run's items after every step costs O(items) per step.
  const counter = ['done', 'failed', 'skipped'].includes(patch.status) ? patch.status : null;
  const result = await knex.raw(
    `with moved as (
       update run_items set ${sets.join(', ')}
       where run_id = :runId and seq = :seq and node_id = :node and status not in ('done', 'failed', 'skipped')
       returning 1
     ), activity as (
       insert into node_activity (run_id, node_id, kind, items_in, items_done, items_failed, ended_at)
       select :runId, :node, :kind, 1, :doneInc, :failedInc, now() where exists (select 1 from moved)
       on conflict (run_id, node_id) do update set
         items_in = node_activity.items_in + 1,
         items_done = node_activity.items_done + excluded.items_done,
         items_failed = node_activity.items_failed + excluded.items_failed,
         ended_at = now()
     ), logged as (
       insert into run_logs (run_id, level, node_id, item_seq, message)
       select :runId, :level, :node, :seq, :log::text where :log::text is not null and exists (select 1 from moved)
     )
     update runs set
       done = done + (case when :counter::text = 'done' then 1 else 0 end),
       failed = failed + (case when :counter::text = 'failed' then 1 else 0 end),
       skipped = skipped + (case when :counter::text = 'skipped' then 1 else 0 end),
       usage = case when :hasRunUsage then jsonb_build_object(
         'input_tokens', coalesce((usage->>'input_tokens')::bigint, 0) + :input,
         'output_tokens', coalesce((usage->>'output_tokens')::bigint, 0) + :output,
         'cache_read_tokens', coalesce((usage->>'cache_read_tokens')::bigint, 0) + :cacheRead,
         'cost_usd', coalesce((usage->>'cost_usd')::numeric, 0) + :cost) else usage end
     where id = :runId and exists (select 1 from moved)`,
    {
      runId,
      seq,
      node: node.id,
      kind: node.kind,
      status: patch.status,
      error: patch.error ?? null,
      data: 'data' in patch ? JSON.stringify(patch.data) : null,
      nodeId: patch.node_id ?? null,
      reasoning: patch.reasoning ?? null,
      usage: usage ? JSON.stringify(usage) : null,
      doneInc: outcome === 'done' ? 1 : 0,
      failedInc: outcome === 'failed' ? 1 : 0,
      level: outcome === 'failed' ? 'warn' : 'info',
      log: log ?? null,
      counter,
      hasRunUsage: runUsage !== undefined,
      input: runUsage?.input_tokens ?? 0,
      output: runUsage?.output_tokens ?? 0,
      cacheRead: runUsage?.cache_read_tokens ?? 0,
      cost: runUsage?.cost_usd ?? 0,
    },
  );
  return result.rowCount > 0; // the run's row is updated only when the item moved
}
