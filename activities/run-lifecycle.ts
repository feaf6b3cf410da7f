// The first and last activities of a run: expand the input into items, and settle the run at the end.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { appendRunLog, settleRun, type RunCounts } from '../db/run-progress';
import { asStoredJsonb, writeSettledRun } from '../db/settled-run';
import { recordEvent, type TimelineEvent } from '../db/timeline';
import type { AgentSpec } from '../model/agent';
import type { ItemData } from '../model/interpreter';
import { pageWalker, type ItemRow } from './page-walk';
import { InputError, itemsOfRun } from '../model/input-parsing';
import { sourcedItems } from './sourced-items';
import { renderOutputFile } from './output-files';
import type { Knex } from 'knex';
import { currentMonth } from '../db/workspaces';
import { ActivityDeps, loadRun, loadSpec, type PhaseRun, type RunRow } from './deps';
import { recordRunEnded } from '../services/telemetry/metrics';

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

/** A run's input read into items, before any is stored; `first`: the node after the input node. */
interface FreshInput {
  spec: AgentSpec;
  items: ItemData[];
  first: string | null;
}

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
  const planOf = (run: RunRow, spec: AgentSpec, total: number): RunPlan => ({
    agentId: run.agent_id,
    agentVersion: run.agent_version,
    total,
    pageSize,
    pageWindow: 4,
    concurrency: spec.policy.concurrency,
    itemAttempts: spec.policy.error_policy.retries + 1,
    modelUnavailableRetries: config.model.unavailableRetries,
    stopOnFailure: spec.policy.error_policy.on_item_failure === 'stop',
    approvalTimeoutSeconds: spec.policy.approval_timeout_seconds,
    onApprovalTimeout: spec.policy.on_approval_timeout,
  });

  /** The run's plan; for a run that has not begun yet, its input read into items too (nothing stored yet). */
  async function begin(run: PhaseRun): Promise<{ plan: RunPlan; fresh?: FreshInput }> {
    const spec = await loadSpec(knex, run.agent_id, run.agent_version);
    if (run.status === 'skipped') return { plan: { ...planOf(run, spec, 0), skipped: run.error ?? 'skipped' } };
    if (run.total > 0) return { plan: planOf(run, spec, run.total) };
    // No scheduled or triggered run executes while the agent is paused, even one already on its way when
    // the agent was paused. Test runs are how a person tries an agent in any state.
    if (run.trigger !== 'test') {
      const state = run.agent_state ?? (await knex('agents').where({ id: run.agent_id }).first('state')).state;
      if (state !== 'live') return { plan: { ...planOf(run, spec, 0), skipped: await skipRun(knex, run, state) } };
    }

    const inputNode = spec.nodes[0];
    if (inputNode.kind !== 'input') throw ApplicationFailure.nonRetryable('the agent has no input node');
    let items: ItemData[];
    try {
      // A retry or a test run on past items runs over other runs' items, as each of those runs read its input.
      items = run.retry_of || run.dry_run ? await sourcedItems(knex, run.id) : itemsOfRun(inputNode, run);
    } catch (err) {
      if (err instanceof InputError) throw ApplicationFailure.nonRetryable(err.message, 'InputError');
      throw err;
    }
    return { plan: planOf(run, spec, items.length), fresh: { spec, items, first: inputNode.next ?? null } };
  }

  /** Idempotent: a retry or a continued-as-new run finds its items already there. */
  async function storeItems(run: RunRow, { items, first }: FreshInput): Promise<void> {
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
        runId: run.id,
        status: first ? 'pending' : 'done',
        first,
        items: JSON.stringify(items),
        total: items.length,
        message: parsedMessage(items.length),
      },
    );
  }

  /**
   * A fresh run whose every item ends within set-based nodes (no model, tool, person, state store or other agent
   * on its way) is walked in memory and written with its end in one statement: the common event-driven run of one
   * item then costs the worker two statements (reading the run, writing it) where the paged path makes some twenty.
   * Undefined, having written nothing, for any other run.
   */
  async function settleAtOnce(
    run: RunRow,
    { spec, items: parsed, first }: FreshInput,
    workflowId: string,
  ): Promise<string | undefined> {
    if (parsed.length > pageSize) return undefined;
    // Walked on the items as the paged path reads them back from the database, so both give the same results.
    const items: ItemRow[] = parsed.map((data, seq) => ({
      seq,
      status: first ? 'pending' : 'done',
      data: asStoredJsonb(data) as ItemData,
      node_id: first,
      output: null,
      output_node: null,
      error: null,
    }));
    const walker = pageWalker(spec, run, workflowId);
    for (const item of items) if (walker.walk(item) !== undefined) return undefined; // a state-store operation
    if (walker.actions.length > 0 || walker.flagged.length > 0) return undefined;

    const outputsAt = (nodeId: string) =>
      items.filter((i) => i.output_node === nodeId).map((i) => asStoredJsonb(i.output) as Record<string, unknown>);
    const { outputs, files } = await renderOutputs(spec, outputsAt);
    const failed = items.filter((i) => i.status === 'failed').length;
    const counts = { total: items.length, done: items.length - failed, failed, needs_review: 0 };
    const status = counts.total > 0 && failed === counts.total ? 'failed' : 'completed';
    const written = await writeSettledRun(knex, {
      run,
      end: { status, error: status === 'failed' ? allFailed(counts.total) : null, ...counts },
      items: items.map(({ seq, status, data, node_id, output, output_node, error }) => ({
        seq,
        status,
        data,
        node_id,
        output: output ?? null,
        output_node,
        error,
      })),
      activity: [...walker.counters].map(([node_id, c]) => ({
        node_id,
        kind: c.kind,
        items_in: c.in,
        items_done: c.done,
        items_failed: c.failed,
      })),
      logs: [
        { level: 'info', message: parsedMessage(items.length) },
        ...walker.logs.map(({ run_id: _, ...log }) => log),
        endLog(status, counts),
      ],
      outputs,
      files,
      event: endEvent(run, status, counts),
      tested: run.trigger === 'test' && status === 'completed',
    });
    // Opened or ended by another attempt meanwhile: the retry reads the run again and goes the way it now stands.
    if (!written) throw new Error(`run ${run.id} changed while it was being settled; reading it again`);
    // Started and ended in the one statement: the API reports no duration, and neither do the metrics.
    recordRunEnded(run.agent_id, status, 0, { done: counts.done, failed, needs_review: 0, skipped: 0 });
    return status;
  }

  /** Each output node's outputs (as stored, in item order; the first 1,000 kept on the run) and its file. */
  async function renderOutputs(
    spec: AgentSpec,
    outputsAt: (nodeId: string) => Promise<Record<string, unknown>[]> | Record<string, unknown>[],
  ) {
    const files: { id: string; name: string; content_type: string; size: number; content: Buffer }[] = [];
    const outputs: { node_id: string; data: Record<string, unknown>[] }[] = [];
    for (const node of spec.nodes) {
      if (node.kind !== 'output') continue;
      const data = await outputsAt(node.id);
      outputs.push({ node_id: node.id, data: data.slice(0, 1_000) });
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
    return { outputs, files };
  }

  return {
    async prepare(run: PhaseRun): Promise<RunPlan> {
      const { plan, fresh } = await begin(run);
      if (fresh) await storeItems(run, fresh);
      return plan;
    },

    /** prepare, or, for a small run that needs no per-item step, the whole run at once (see settleAtOnce). */
    async prepareOrSettle(run: PhaseRun, workflowId: string): Promise<{ plan: RunPlan; settled?: string }> {
      const { plan, fresh } = await begin(run);
      if (!fresh) return { plan };
      const settled = await settleAtOnce(run, fresh, workflowId);
      if (settled) return { plan, settled };
      await storeItems(run, fresh);
      return { plan };
    },

    /** Builds output files, closes leftover items and approvals, and sets the run's final status. */
    async finish(run: RunRow, { runId, cancelled, stoppedBy, error }: FinishRunInput): Promise<string> {
      if (!['running', 'needs_review', 'paused'].includes(run.status)) return run.status; // already settled
      const spec = await loadSpec(knex, run.agent_id, run.agent_version);
      const interrupted = cancelled || stoppedBy !== undefined || error !== undefined;
      const { outputs, files } = await renderOutputs(spec, async (nodeId) => {
        const rows: { output: Record<string, unknown> }[] = await knex('run_items')
          .where({ run_id: runId, output_node: nodeId })
          .orderBy('seq')
          .select('output');
        return rows.map((r) => r.output);
      });

      const ended = await knex.transaction(async (trx) => {
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
          // Nothing waits on a person any more: every open approval (escalated too) and review closes with the run.
          await trx('approvals')
            .where({ run_id: runId })
            .whereIn('status', ['pending', 'escalated'])
            .update({ status: 'cancelled', reason: why });
          await trx('item_reviews').where({ run_id: runId, status: 'pending' }).update({ status: 'cancelled' });
        }
        if (outputs.length > 0) {
          await trx('run_outputs')
            .insert(outputs.map((o) => ({ run_id: runId, node_id: o.node_id, data: JSON.stringify(o.data) })))
            .onConflict(['run_id', 'node_id'])
            .merge();
        }
        if (files.length > 0) {
          await trx('files').insert(files.map((f) => ({ ...f, workspace_id: run.workspace_id, run_id: runId })));
        }
        const { status, counts, skipped, seconds } = await settleRun(trx, runId, {
          cancelled: cancelled === true,
          interrupted,
          error: error ?? stoppedBy ?? null,
          allFailed: allFailed(run.total),
        });
        await recordEvent(trx, endEvent(run, status, counts));
        if (run.trigger === 'test' && status === 'completed') {
          // A successful test run of this version is what lets the agent move from Draft to Ready.
          await trx('agents')
            .where({ id: run.agent_id, current_version: run.agent_version })
            .update({ tested_version: run.agent_version });
        }
        await appendRunLog(trx, [{ run_id: runId, ...endLog(status, counts) }]);
        return { status, counts, skipped, seconds };
      });
      const { done, failed, needs_review } = ended.counts;
      recordRunEnded(run.agent_id, ended.status, ended.seconds, { done, failed, needs_review, skipped: ended.skipped });
      return ended.status;
    },
  };
}

const parsedMessage = (total: number) => `input parsed into ${total} items`;
const allFailed = (total: number) => `all ${total} items failed`;

/** The run's last log line. */
function endLog(status: string, counts: RunCounts): { level: 'info' | 'error'; message: string } {
  return {
    level: status === 'failed' ? 'error' : 'info',
    message: `run ${status}: ${counts.done} done, ${counts.failed} failed, ${counts.needs_review} need review of ${counts.total}`,
  };
}

/** The agent's timeline entry for the run's end. */
function endEvent(run: RunRow, status: string, counts: RunCounts): TimelineEvent {
  const what = run.trigger === 'test' ? 'test run' : `${run.trigger} run`;
  return {
    workspace_id: run.workspace_id,
    agent_id: run.agent_id,
    kind: run.trigger === 'test' ? 'test_run' : 'run_finished',
    run_id: run.id,
    trigger_id: run.trigger_id,
    message: `${what} of version ${run.agent_version} ${status}: ${counts.done} done, ${counts.failed} failed, ${counts.needs_review} need review of ${counts.total}`,
    details: { status, trigger: run.trigger, counts },
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
  const ended = await knex.transaction(async (trx) => {
    const [skipped] = await trx('runs')
      .where({ id: run.id })
      .whereIn('status', ['running', 'paused'])
      .update({ status: 'skipped', error: why, ended_at: trx.fn.now() })
      .returning(['created_at', 'started_at', 'ended_at']);
    if (!skipped) return undefined;
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
    return skipped as { created_at: Date; started_at: Date | null; ended_at: Date };
  });
  if (ended) {
    const seconds = (ended.ended_at.getTime() - (ended.started_at ?? ended.created_at).getTime()) / 1000;
    recordRunEnded(run.agent_id, 'skipped', seconds, { done: 0, failed: 0, needs_review: 0, skipped: 0 });
  }
  return why;
}
