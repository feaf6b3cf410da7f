// One per-item step: an external tool call, an approval gate, or a model step. Idempotent: the effects ledger
// records each side effect under (run, item, node), so a retried activity or a restarted worker returns the
// recorded result instead of acting twice.
import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import { ApplicationFailure } from '@temporalio/common';
import { appendRunLog, recordNodeActivity } from '../db/run-progress';
import { applyStateOps } from '../db/state-store';
import type { AgentNode } from '../workflows/agent-model';
import { nextNodeId, render, saveResult, type ItemData } from '../workflows/interpreter';
import { isToolName, toolDefinitions } from './tools/definitions';
import { externalToolHandlers } from './tools/handlers';
import { stateOpFor } from './page-advance';
import { ActivityDeps, loadSpec, nodeById } from './deps';
import { runModelStep, type ModelStepResult } from './llm-step';
import { runRetrieveStep } from './sources/retrieve-step';

export interface Decision {
  approved: boolean;
  arguments?: Record<string, unknown>;
  by: string;
  reason?: string;
}

export type StepOutcome = 'advanced' | 'failed' | 'skipped' | 'already_done';

function isPermanent(err: unknown): boolean {
  if (err instanceof ApplicationFailure) return err.nonRetryable === true;
  return err instanceof Error && err.name === 'ZodError';
}

export function createItemStepActivities(deps: ActivityDeps) {
  const { knex, config } = deps;

  async function callTool(
    node: Extract<AgentNode, { kind: 'tool' }>,
    args: Record<string, unknown>,
    runId: string,
    agentId: string,
    key: string,
  ) {
    if (!isToolName(node.tool)) throw ApplicationFailure.nonRetryable(`unknown tool "${node.tool}"`, 'UnknownTool');
    const recorded = await knex('effects').where({ key }).first('result');
    if (recorded) return recorded.result;
    const stateOp = stateOpFor(node, args);
    if (stateOp) {
      return knex.transaction(async (trx) => {
        const [result] = await applyStateOps(trx, agentId, [stateOp]);
        await trx('effects').insert({ key, run_id: runId, result: JSON.stringify(result ?? null) });
        return result;
      });
    }
    const input = toolDefinitions[node.tool].input.parse(args);
    const handler = externalToolHandlers[node.tool] as (i: unknown, c: unknown) => Promise<unknown>;
    const result = await handler(input, { idempotencyKey: key, http: config.http, smtp: config.smtp });
    await knex('effects')
      .insert({ key, run_id: runId, result: JSON.stringify(result ?? null) })
      .onConflict('key')
      .ignore();
    return result;
  }

  return {
    async executeStep({
      runId,
      agentId,
      agentVersion,
      seq,
      nodeId,
      decision,
      maxAttempts,
    }: {
      runId: string;
      agentId: string;
      agentVersion: number;
      seq: number;
      nodeId: string;
      decision?: Decision;
      maxAttempts: number;
    }): Promise<StepOutcome> {
      const spec = await loadSpec(knex, agentId, agentVersion);
      const node = nodeById(spec, nodeId);
      const item = await knex('run_items')
        .where({ run_id: runId, seq })
        .first('status', 'data', 'node_id', 'reasoning');
      if (!item || item.node_id !== nodeId || ['done', 'failed', 'skipped'].includes(item.status))
        return 'already_done';

      const settle = async (
        patch: Record<string, unknown>,
        outcome: 'done' | 'failed',
        log?: string,
        usage?: ModelStepResult['usage'],
      ) => {
        await knex.transaction(async (trx) => {
          // Guarded by the node the item stands at, so a retried attempt cannot count the item twice.
          const moved = await trx('run_items')
            .where({ run_id: runId, seq, node_id: nodeId })
            .whereNotIn('status', ['done', 'failed', 'skipped'])
            .update({ ...patch, ...(usage ? { usage: JSON.stringify(usage) } : {}), updated_at: trx.fn.now() });
          if (moved === 0) return;
          if (usage) await addRunUsage(trx, runId, usage);
          await recordNodeActivity(
            trx,
            runId,
            new Map([
              [
                node.id,
                { kind: node.kind, in: 1, done: outcome === 'done' ? 1 : 0, failed: outcome === 'failed' ? 1 : 0 },
              ],
            ]),
          );
          if (log) {
            await appendRunLog(trx, [
              {
                run_id: runId,
                level: outcome === 'failed' ? 'warn' : 'info',
                node_id: node.id,
                item_seq: seq,
                message: log,
              },
            ]);
          }
          // Counted incrementally: recounting the run's items after every step costs O(items) per step.
          const finalStatus = patch.status as string;
          if (['done', 'failed', 'skipped'].includes(finalStatus)) {
            await trx('runs').where({ id: runId }).increment(finalStatus, 1);
          }
        });
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
          next = saveResult(data, node.save_as, await callTool(node, args, runId, agentId, key));
        } else if (node.kind === 'llm') {
          const step = await runModelStep({ deps, spec, node, data, runId, seq });
          next = saveResult(data, node.save_as, step.output);
          reasoning = [...((item.reasoning as unknown[]) ?? []), ...step.reasoning];
          usage = step.usage;
        } else if (node.kind === 'retrieve') {
          next = saveResult(data, node.save_as, await runRetrieveStep({ deps, spec, node, data, runId, seq }));
        } else if (node.kind !== 'approval') {
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
        if (!isPermanent(err) && attempt < maxAttempts) throw err; // Temporal retries with backoff
        const message = err instanceof Error ? err.message : String(err);
        await settle(
          { status: 'failed', error: `${node.id}: ${message}` },
          'failed',
          `${node.id} failed after ${attempt} attempt(s): ${message}`,
        );
        return 'failed';
      }
    },
  };
}

async function addRunUsage(trx: Knex.Transaction, runId: string, usage: ModelStepResult['usage']): Promise<void> {
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
