// The first and last activities of a run: expand the input into items, and settle the run at the end.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { appendRunLog, settleRun } from '../db/run-progress';
import { recordEvent } from '../db/timeline';
import type { AgentSpec } from '../model/agent';
import { InputError, parseInput } from './input-parsing';
import { renderOutputFile } from './output-files';
import type { Knex } from 'knex';
import { currentMonth } from '../db/workspaces';
import { ActivityDeps, loadRun, loadSpec, type RunRow } from './deps';

export interface RunPlan {
  /** The agent version the run pinned, so per-item steps need not read the run again. */
  agentId: string;
  agentVersion: number;
  total: number;
  pageSize: number;
  /** Child page workflows running at once. */
  pageWindow: number;
  concurrency: number;
  itemAttempts: number;
  /** Extra attempts of a model step while the model API is unavailable (not counted against item retries). */
  modelUnavailableRetries: number;
  stopOnFailure: boolean;
  approvalTimeoutSeconds: number;
  onApprovalTimeout: AgentSpec['policy']['on_approval_timeout'];
  /** Set when the run did nothing because its agent was not live when it began (a paused agent). */
  skipped?: string;
}

export const pageSize = 1_000;

export interface FinishRunInput {
  runId: string;
  cancelled?: boolean;
  stoppedBy?: string;
  error?: string;
}

/**
 * A run's first and last steps on a run row the caller has read (the opening phase reads it once for all its parts,
 * activities/run-phases.ts); the activities below read it themselves.
 */
export function runLifecycle({ knex, config }: ActivityDeps) {
  return {
    /** Idempotent: a retry or a continued-as-new run finds its items already there. */
    async prepare(run: RunRow): Promise<RunPlan> {
      const runId = run.id;
      const spec = await loadSpec(knex, run.agent_id, run.agent_version);
      const policy = spec.policy;
      const plan = (total: number): RunPlan => ({
        agentId: run.agent_id,
        agentVersion: run.agent_version,
        total,
        pageSize,
        pageWindow: 4,
        concurrency: policy.concurrency,
        itemAttempts: policy.error_policy.retries + 1,
        modelUnavailableRetries: config.model.unavailableRetries,
        stopOnFailure: policy.error_policy.on_item_failure === 'stop',
        approvalTimeoutSeconds: policy.approval_timeout_seconds,
        onApprovalTimeout: policy.on_approval_timeout,
      });
      if (run.status === 'skipped') return { ...plan(0), skipped: run.error ?? 'skipped' };
      if (run.total > 0) return plan(run.total);
      // No scheduled or triggered run executes while the agent is paused, even one already on its way when
      // the agent was paused. Test runs are how a person tries an agent in any state.
      if (run.trigger !== 'test') {
        const agent = await knex('agents').where({ id: run.agent_id }).first('state');
        if (agent.state !== 'live') return { ...plan(0), skipped: await skipRun(knex, run, agent.state) };
      }

      const inputNode = spec.nodes[0];
      if (inputNode.kind !== 'input') throw ApplicationFailure.nonRetryable('the agent has no input node');
      let items;
      try {
        items = parseInput(inputNode, run.input);
      } catch (err) {
        if (err instanceof InputError) throw ApplicationFailure.nonRetryable(err.message, 'InputError');
        throw err;
      }
      const first = inputNode.next ?? null;
      // One statement for the whole input (the items travel as one JSON parameter), the run's total and its log
      // line: nothing held open across round trips (the embedded database serves one transaction at a time).
      await knex.raw(
        `with items as (
           insert into run_items (run_id, seq, status, data, node_id)
           select :runId, (e.ord - 1)::int, :status, e.value, :first
           from jsonb_array_elements(:items::jsonb) with ordinality as e(value, ord)
           on conflict do nothing
         ), run as (
           update runs set total = :total, started_at = now() where id = :runId
         )
         insert into run_logs (run_id, level, message) values (:runId, 'info', :message)`,
        {
          runId,
          status: first ? 'pending' : 'done',
          first,
          items: JSON.stringify(items),
          total: items.length,
          message: `input parsed into ${items.length} items`,
        },
      );
      return plan(items.length);
    },

    /** Builds output files, closes leftover items and approvals, and sets the run's final status. */
    async finish(run: RunRow, { runId, cancelled, stoppedBy, error }: FinishRunInput): Promise<string> {
      if (!['running', 'needs_review'].includes(run.status)) return run.status; // already settled
      const spec = await loadSpec(knex, run.agent_id, run.agent_version);
      const interrupted = cancelled || stoppedBy !== undefined || error !== undefined;

      const files: { id: string; name: string; content_type: string; size: number; content: Buffer }[] = [];
      const outputs: { run_id: string; node_id: string; data: string }[] = [];
      for (const node of spec.nodes) {
        if (node.kind !== 'output') continue;
        const rows: { output: Record<string, unknown> }[] = await knex('run_items')
          .where({ run_id: runId, output_node: node.id })
          .orderBy('seq')
          .select('output');
        const data = rows.map((r) => r.output);
        outputs.push({ run_id: runId, node_id: node.id, data: JSON.stringify(data.slice(0, 1_000)) });
        if (data.length === 0) continue;
        const file = await renderOutputFile(node.format, node.file_name ?? node.id, data, node.fields);
        files.push({
          id: randomUUID(),
          name: file.name,
          content_type: file.contentType,
          size: file.content.length,
          content: file.content,
        });
      }

      return knex.transaction(async (trx) => {
        if (interrupted) {
          const why = cancelled ? 'run cancelled' : (stoppedBy ?? error ?? 'run stopped');
          // Items not yet finished, including those waiting on an approval; flagged items keep their state.
          await trx('run_items')
            .where({ run_id: runId })
            .andWhere((q) =>
              q
                .whereIn('status', ['pending', 'running'])
                .orWhereExists(
                  trx('approvals')
                    .whereRaw('approvals.run_id = run_items.run_id and approvals.item_seq = run_items.seq')
                    .whereIn('approvals.status', ['pending', 'escalated']),
                ),
            )
            .update({ status: 'skipped', error: why, updated_at: trx.fn.now() });
          await trx('approvals')
            .where({ run_id: runId, status: 'pending' })
            .update({ status: 'cancelled', reason: why });
        }
        if (outputs.length > 0) {
          await trx('run_outputs').insert(outputs).onConflict(['run_id', 'node_id']).merge();
        }
        if (files.length > 0) {
          await trx('files').insert(files.map((f) => ({ ...f, workspace_id: run.workspace_id, run_id: runId })));
        }
        const { status, counts } = await settleRun(trx, runId, {
          cancelled: cancelled === true,
          interrupted,
          error: error ?? stoppedBy ?? null,
        });
        await recordEvent(trx, {
          workspace_id: run.workspace_id,
          agent_id: run.agent_id,
          kind: run.trigger === 'test' ? 'test_run' : 'run_finished',
          run_id: runId,
          trigger_id: run.trigger_id,
          message: `${run.trigger === 'test' ? 'test run' : `${run.trigger} run`} of version ${run.agent_version} ${status}: ${counts.done} done, ${counts.failed} failed, ${counts.needs_review} need review of ${counts.total}`,
          details: { status, trigger: run.trigger, counts },
        });
        if (run.trigger === 'test' && status === 'completed') {
          // A successful test run of this version is what lets the agent move from Draft to Ready.
          await trx('agents')
            .where({ id: run.agent_id, current_version: run.agent_version })
            .update({ tested_version: run.agent_version });
        }
        await appendRunLog(trx, [
          {
            run_id: runId,
            level: status === 'failed' ? 'error' : 'info',
            message: `run ${status}: ${counts.done} done, ${counts.failed} failed, ${counts.needs_review} need review of ${counts.total}`,
          },
        ]);
        return status;
      });
    },
  };
}

export function createRunLifecycleActivities(deps: ActivityDeps) {
  const { prepare, finish } = runLifecycle(deps);
  return {
    prepareRun: async ({ runId }: { runId: string }): Promise<RunPlan> => prepare(await loadRun(deps.knex, runId)),
    finishRun: async (input: FinishRunInput): Promise<string> => finish(await loadRun(deps.knex, input.runId), input),
  };
}

/** Ends a run that found its agent not live: nothing ran, so it does not count against the plan either. */
async function skipRun(knex: Knex, run: RunRow, agentState: string): Promise<string> {
  const why = `the agent was ${agentState} when the run began, so it did nothing`;
  await knex.transaction(async (trx) => {
    const [skipped] = await trx('runs')
      .where({ id: run.id, status: 'running' })
      .update({ status: 'skipped', error: why, ended_at: trx.fn.now() })
      .returning('created_at');
    if (!skipped) return;
    await trx('workspace_usage')
      .where({ workspace_id: run.workspace_id, month: currentMonth(skipped.created_at) })
      .andWhere('runs', '>', 0)
      .decrement('runs', 1);
    await appendRunLog(trx, [{ run_id: run.id, level: 'warn', message: `run skipped: ${why}` }]);
    await recordEvent(trx, {
      workspace_id: run.workspace_id,
      agent_id: run.agent_id,
      kind: 'trigger_skipped',
      run_id: run.id,
      trigger_id: run.trigger_id,
      message: `${run.trigger} run skipped: the agent was ${agentState} when it began`,
      details: { reason: 'paused', trigger: run.trigger },
    });
  });
  return why;
}
