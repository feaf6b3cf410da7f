// Opening a run: the run row, its idempotency key and the plan allowance, written in one transaction. Every
// way a run starts goes through here (API, console, schedules, webhooks, forms, chains); callers start the
// workflow after it commits and turn a refusal into their own kind of answer.
// The same statement checks that the agent is still live (any state for a test run) and still at the version the
// caller read and checked the input against: an agent paused or edited meanwhile opens nothing ('agent_changed'),
// so a run can never start on a paused agent or on a version its input was not checked for. Likewise the API key that
// asked, if one did: a key revoked meanwhile opens nothing ('key_changed'), so the caller may have verified it a
// moment ago rather than on this request.
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AgentRow } from './agents';
import type { RunRecord, Trigger } from './runs';
import { planLimits } from '../model/plan';
import { currentMonth, takeRunAllowance, type Workspace } from './workspaces';

export interface OpenRunRequest {
  workspace: Workspace;
  agent: AgentRow;
  input: string;
  trigger: Trigger;
  triggerId?: string;
  runLinkId?: string;
  /** The time a schedule fired for (its scheduled time), on a run a schedule started. */
  firedAt?: Date;
  /** The run, item and node of a call_agent step that starts this run. */
  parent?: { runId: string; itemSeq: number; nodeId: string };
  /** The same key with the same request finds the run it started; with another request it is refused. */
  idempotencyKey?: string;
  /**
   * The key alone names the run: the same key with another input still finds the run it opened (a trigger's fire,
   * an event read again after its row changed), rather than being refused as `key_reused`.
   */
  keyNamesRun?: boolean;
  /** The agent version the run pins, when not the agent's current one (a retry, a test of another version). */
  version?: number;
  /** The run whose failed items this run retries. */
  retryOf?: string;
  /** A test run on past items: nothing acts in another system (activities/effects-ledger.ts). */
  dryRun?: boolean;
  /** The web starts this run's workflow, and its start sweep may start it again (services/runs/dispatch.ts). */
  startPending?: boolean;
  /** The OpenTelemetry trace the run is opened in, when tracing is on (services/telemetry/tracing.ts). */
  traceId?: string;
  /**
   * The API key that asked, when one did: the run opens only while the key is not revoked and its workspace is not
   * deleted, is open to the API and is on `workspace.plan` (the plan its allowance is counted against).
   */
  apiKeyId?: string;
}

export type OpenRunOutcome =
  | { outcome: 'created'; run: RunRecord }
  | { outcome: 'replayed'; runId: string }
  | { outcome: 'key_in_flight' }
  | { outcome: 'key_reused' }
  | { outcome: 'allowance_exhausted' }
  | { outcome: 'agent_changed' };

class Refused extends Error {
  constructor(readonly outcome: 'allowance_exhausted' | 'agent_changed') {
    super(outcome);
  }
}

/** The agent as the caller read it: in the workspace, at that version, and live unless this is a test run. */
function agentAsRead(knex: Knex, req: OpenRunRequest) {
  return knex('agents')
    .where({ id: req.agent.id, workspace_id: req.workspace.id, current_version: req.agent.current_version })
    .modify((q) => {
      if (req.trigger !== 'test') void q.where({ state: 'live' });
    });
}

/** The API key that asked, as the caller verified it: still valid, its workspace on the same plan. */
function keyAsVerified(knex: Knex, req: OpenRunRequest) {
  return knex('api_keys as k')
    .join('workspaces as w', 'w.id', 'k.workspace_id')
    .where({
      'k.id': req.apiKeyId,
      'k.workspace_id': req.workspace.id,
      'w.api_enabled': true,
      'w.plan': req.workspace.plan,
    })
    .whereNull('k.revoked_at')
    .where((q) => q.whereNull('k.expires_at').orWhere('k.expires_at', '>', knex.fn.now()))
    .whereNull('w.deleted_at');
}

/** Only a start with an API key can find the key changed. */
type KeyedOutcome = OpenRunOutcome | { outcome: 'key_changed' };

const requestHashOf = (req: Pick<OpenRunRequest, 'agent' | 'input'>) =>
  createHash('sha256')
    .update(JSON.stringify([req.agent.id, req.input]))
    .digest('hex');

/**
 * A fire that found its agent not live (a schedule's fire racing the pause): a run that ends `skipped` at once,
 * did nothing and is not counted against the plan, so the fire is a run in the agent's history like any other.
 * Idempotent on the key: a retry finds the run its first attempt made (`fresh` false). When the key already opened
 * a real run (an earlier attempt, before the pause), that run is answered: its own first step ends it skipped.
 */
export async function openSkippedRun(
  knex: Knex,
  req: Omit<OpenRunRequest, 'idempotencyKey' | 'apiKeyId' | 'startPending'> & {
    idempotencyKey: string;
    why: string;
  },
): Promise<{ runId: string; status: string; fresh: boolean }> {
  const [inserted] = await knex('runs')
    .insert({
      id: randomUUID(),
      workspace_id: req.workspace.id,
      agent_id: req.agent.id,
      agent_version: req.agent.current_version,
      status: 'skipped',
      trigger: req.trigger,
      trigger_id: req.triggerId ?? null,
      input: req.input,
      fired_at: req.firedAt ?? null,
      idempotency_key: req.idempotencyKey,
      request_hash: requestHashOf(req),
      error: req.why,
      ended_at: knex.fn.now(),
    })
    .onConflict(['workspace_id', 'idempotency_key'])
    .ignore()
    .returning(['id', 'status']);
  if (inserted) return { runId: inserted.id, status: inserted.status, fresh: true };
  const existing = await knex('runs')
    .where({ workspace_id: req.workspace.id, idempotency_key: req.idempotencyKey })
    .first('id', 'status');
  return { runId: existing.id, status: existing.status, fresh: false };
}

export function openRun(knex: Knex, req: OpenRunRequest & { apiKeyId?: undefined }): Promise<OpenRunOutcome>;
export function openRun(knex: Knex, req: OpenRunRequest): Promise<KeyedOutcome>;
export async function openRun(knex: Knex, req: OpenRunRequest): Promise<KeyedOutcome> {
  const requestHash = requestHashOf(req);
  if (!req.idempotencyKey) return openRunInOneStatement(knex, req, requestHash);
  try {
    return await knex.transaction(async (trx): Promise<KeyedOutcome> => {
      // Before a replay too: a revoked key learns nothing, not even the run it opened.
      if (req.apiKeyId && !(await keyAsVerified(trx, req).first('k.id'))) return { outcome: 'key_changed' };
      const inserted = await trx('runs')
        .insert({
          id: randomUUID(),
          workspace_id: req.workspace.id,
          agent_id: req.agent.id,
          agent_version: req.version ?? req.agent.current_version,
          trigger: req.trigger,
          trigger_id: req.triggerId ?? null,
          run_link_id: req.runLinkId ?? null,
          parent_run_id: req.parent?.runId ?? null,
          parent_item_seq: req.parent?.itemSeq ?? null,
          parent_node_id: req.parent?.nodeId ?? null,
          input: req.input,
          fired_at: req.firedAt ?? null,
          idempotency_key: req.idempotencyKey ?? null,
          request_hash: requestHash,
          start_pending: req.startPending ?? false,
          retry_of: req.retryOf ?? null,
          dry_run: req.dryRun ?? false,
          trace_id: req.traceId ?? null,
        })
        .onConflict(['workspace_id', 'idempotency_key'])
        .ignore()
        .returning('*');
      if (inserted.length === 0) {
        // A replay answers with the run the key opened, whatever the agent has become since.
        const existing = await trx('runs')
          .where({ workspace_id: req.workspace.id, idempotency_key: req.idempotencyKey })
          .first('id', 'request_hash');
        if (!existing) return { outcome: 'key_in_flight' };
        if (existing.request_hash !== requestHash && !req.keyNamesRun) return { outcome: 'key_reused' };
        return { outcome: 'replayed', runId: existing.id };
      }
      // Throwing rolls the insert back (with the allowance, when that is what refused).
      const agent = await agentAsRead(trx, req).first('name');
      if (!agent) throw new Refused('agent_changed');
      if (!(await takeRunAllowance(trx, req.workspace))) throw new Refused('allowance_exhausted');
      return { outcome: 'created', run: { ...inserted[0], agent_name: agent.name } };
    });
  } catch (err) {
    if (err instanceof Refused) return { outcome: err.outcome };
    throw err;
  }
}

/**
 * Without an idempotency key there is nothing to look up: the agent check, the allowance and the run row are one
 * statement (atomic on its own), one round trip instead of a transaction's four. This is the common start.
 */
async function openRunInOneStatement(knex: Knex, req: OpenRunRequest, requestHash: string): Promise<KeyedOutcome> {
  const result = await knex.raw(
    `with caller as ( -- keyAsVerified, when a key asked
       select from api_keys k join workspaces w on w.id = k.workspace_id
       where k.id = :key and k.workspace_id = :ws and w.api_enabled and w.plan = :plan
         and k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) and w.deleted_at is null
     ),
     agent as ( -- agentAsRead
       select name from agents
       where id = :agent and workspace_id = :ws and current_version = :version
         and (:trigger::text = 'test' or state = 'live')
         and (:key::uuid is null or exists (select from caller))
     ),
     allowance as (
       insert into workspace_usage (workspace_id, month, runs) select :ws, :month, 1 where exists (select from agent)
       on conflict (workspace_id, month) do update set runs = workspace_usage.runs + 1
         where :limit::int is null or workspace_usage.runs < :limit::int
       returning runs
     )
     insert into runs (id, workspace_id, agent_id, agent_version, trigger, trigger_id, run_link_id, parent_run_id,
                       parent_item_seq, parent_node_id, input, fired_at, request_hash, start_pending, retry_of, dry_run,
                       trace_id)
     select :id, :ws, :agent, :runVersion, :trigger, :triggerId, :runLinkId, :parentRunId, :parentItemSeq::int,
            :parentNodeId, :input, :firedAt::timestamptz, :hash, :startPending, :retryOf::uuid, :dryRun, :traceId
     where exists (select 1 from allowance where :limit::int is null or runs <= :limit::int)
     returning *, (select name from agent) as agent_name`,
    {
      ws: req.workspace.id,
      key: req.apiKeyId ?? null,
      plan: req.workspace.plan,
      month: currentMonth(),
      limit: planLimits[req.workspace.plan].runsPerMonth,
      id: randomUUID(),
      agent: req.agent.id,
      version: req.agent.current_version,
      runVersion: req.version ?? req.agent.current_version,
      trigger: req.trigger,
      triggerId: req.triggerId ?? null,
      runLinkId: req.runLinkId ?? null,
      parentRunId: req.parent?.runId ?? null,
      parentItemSeq: req.parent?.itemSeq ?? null,
      parentNodeId: req.parent?.nodeId ?? null,
      input: req.input,
      firedAt: req.firedAt ?? null,
      hash: requestHash,
      startPending: req.startPending ?? false,
      retryOf: req.retryOf ?? null,
      dryRun: req.dryRun ?? false,
      traceId: req.traceId ?? null,
    },
  );
  if (result.rows.length > 0) return { outcome: 'created', run: result.rows[0] };
  // Nothing opened: say which check refused (a second look, only on this rare path).
  if (req.apiKeyId && !(await keyAsVerified(knex, req).first('k.id'))) return { outcome: 'key_changed' };
  return (await agentAsRead(knex, req).first('id')) ? { outcome: 'allowance_exhausted' } : { outcome: 'agent_changed' };
}

/** A run whose first step must find what came with it (files) is left to the start sweep once that is stored. */
export async function markStartPending(knex: Knex, runId: string): Promise<void> {
  await knex('runs').where({ id: runId }).update({ start_pending: true });
}

/**
 * Runs the web opened more than `olderThanSeconds` ago whose first step has not stored their items yet: either
 * their workflow never started, or it waits behind a backlog. Oldest first.
 */
export function runsAwaitingStart(
  knex: Knex,
  olderThanSeconds: number,
  limit: number,
): Promise<Pick<RunRecord, 'id' | 'workspace_id' | 'agent_id' | 'trigger'>[]> {
  return knex('runs')
    .where({ start_pending: true, status: 'running', total: 0 })
    .where('created_at', '<', knex.raw(`now() - make_interval(secs => ?)`, [olderThanSeconds]))
    .orderBy('created_at')
    .limit(limit)
    .select('id', 'workspace_id', 'agent_id', 'trigger');
}

/** These runs' workflows are known to have started: the sweep need not look at them again. */
export async function markRunsStarted(knex: Knex, runIds: string[]): Promise<void> {
  if (runIds.length > 0) await knex('runs').whereIn('id', runIds).update({ start_pending: false });
}

/** How many runs the start sweep would start now (the backlog /metrics reports). */
export async function countRunsAwaitingStart(knex: Knex, olderThanSeconds: number): Promise<number> {
  const row = await knex('runs')
    .where({ start_pending: true, status: 'running', total: 0 })
    .where('created_at', '<', knex.raw(`now() - make_interval(secs => ?)`, [olderThanSeconds]))
    .count<{ count: string }[]>({ count: '*' })
    .first();
  return Number(row?.count ?? 0);
}
