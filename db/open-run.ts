// Opening a run: the run row, its idempotency key and the plan allowance, written in one transaction. Every
// way a run starts goes through here (API, console, schedules, webhooks, forms, chains); callers start the
// workflow after it commits and turn a refusal into their own kind of answer.
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AgentRow } from './agents';
import type { RunRecord, Trigger } from './runs';
import { currentMonth, planLimits, takeRunAllowance, type Workspace } from './workspaces';

export interface OpenRunRequest {
  workspace: Workspace;
  agent: AgentRow;
  input: string;
  trigger: Trigger;
  triggerId?: string;
  runLinkId?: string;
  /** The same key with the same request finds the run it started; with another request it is refused. */
  idempotencyKey?: string;
}

export type OpenRunOutcome =
  | { outcome: 'created'; run: RunRecord }
  | { outcome: 'replayed'; runId: string }
  | { outcome: 'key_in_flight' }
  | { outcome: 'key_reused' }
  | { outcome: 'allowance_exhausted' };

class AllowanceExhausted extends Error {}

export async function openRun(knex: Knex, req: OpenRunRequest): Promise<OpenRunOutcome> {
  const requestHash = createHash('sha256')
    .update(JSON.stringify([req.agent.id, req.input]))
    .digest('hex');
  if (!req.idempotencyKey) return openRunInOneStatement(knex, req, requestHash);
  try {
    return await knex.transaction(async (trx): Promise<OpenRunOutcome> => {
      const inserted = await trx('runs')
        .insert({
          id: randomUUID(),
          workspace_id: req.workspace.id,
          agent_id: req.agent.id,
          agent_version: req.agent.current_version,
          trigger: req.trigger,
          trigger_id: req.triggerId ?? null,
          run_link_id: req.runLinkId ?? null,
          input: req.input,
          idempotency_key: req.idempotencyKey ?? null,
          request_hash: requestHash,
        })
        .onConflict(['workspace_id', 'idempotency_key'])
        .ignore()
        .returning('*');
      if (inserted.length === 0) {
        const existing = await trx('runs')
          .where({ workspace_id: req.workspace.id, idempotency_key: req.idempotencyKey })
          .first('id', 'request_hash');
        if (!existing) return { outcome: 'key_in_flight' };
        if (existing.request_hash !== requestHash) return { outcome: 'key_reused' };
        return { outcome: 'replayed', runId: existing.id };
      }
      // Throwing rolls the insert back with the refused allowance.
      if (!(await takeRunAllowance(trx, req.workspace))) throw new AllowanceExhausted();
      return { outcome: 'created', run: { ...inserted[0], agent_name: req.agent.name } };
    });
  } catch (err) {
    if (err instanceof AllowanceExhausted) return { outcome: 'allowance_exhausted' };
    throw err;
  }
}

/**
 * Without an idempotency key there is nothing to look up: the allowance and the run row are written by one
 * statement (atomic on its own), one round trip instead of a transaction's four. This is the common start.
 */
async function openRunInOneStatement(knex: Knex, req: OpenRunRequest, requestHash: string): Promise<OpenRunOutcome> {
  const result = await knex.raw(
    `with allowance as (
       insert into workspace_usage (workspace_id, month, runs) values (:ws, :month, 1)
       on conflict (workspace_id, month) do update set runs = workspace_usage.runs + 1
         where :limit::int is null or workspace_usage.runs < :limit::int
       returning runs
     )
     insert into runs (id, workspace_id, agent_id, agent_version, trigger, trigger_id, run_link_id, input,
                       request_hash)
     select :id, :ws, :agent, :version, :trigger, :triggerId, :runLinkId, :input, :hash
     where exists (select 1 from allowance where :limit::int is null or runs <= :limit::int)
     returning *`,
    {
      ws: req.workspace.id,
      month: currentMonth(),
      limit: planLimits[req.workspace.plan].runsPerMonth,
      id: randomUUID(),
      agent: req.agent.id,
      version: req.agent.current_version,
      trigger: req.trigger,
      triggerId: req.triggerId ?? null,
      runLinkId: req.runLinkId ?? null,
      input: req.input,
      hash: requestHash,
    },
  );
  if (result.rows.length === 0) return { outcome: 'allowance_exhausted' };
  return { outcome: 'created', run: { ...result.rows[0], agent_name: req.agent.name } };
}

/** Marks a run whose workflow could not be started, so it does not stay "running" forever. */
export async function failUnstartedRun(knex: Knex, runId: string, reason: string): Promise<void> {
  await knex('runs')
    .where({ id: runId })
    .update({ status: 'failed', error: `the run could not be started: ${reason}`, ended_at: knex.fn.now() });
}
