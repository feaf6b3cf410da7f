// Starting a run: the one path shared by the API, test runs, webhooks and forms. The run row, its idempotency
// key and the plan allowance are written in one transaction (db/open-run.ts); its workflow's start is sent after
// commit, and the caller does not wait for it (api/run-dispatch.ts).
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { InputError, parseInput } from '../activities/input-parsing';
import { getVersion, rereadAgent, type AgentRow } from '../db/agents';
import { markStartPending, openRun } from '../db/open-run';
import { getRun, type RunRecord, type Trigger } from '../db/runs';
import { storeItemSources } from '../db/item-sources';
import type { Workspace } from '../db/workspaces';
import type { TemporalConfig } from '../temporal.config';
import type { Logger } from './logger';
import { ApiError } from './problem';
import { dispatchRunStart } from './run-dispatch';
import { currentTraceId, setActiveSpanAttributes } from '../services/telemetry/tracing';
import { recordRunOpened } from '../services/telemetry/metrics';

export { runWorkflowId } from '../model/run-identity';

export interface RunServiceDeps {
  knex: Knex;
  temporal: Client;
  temporalConfig: TemporalConfig;
  /** Where a start that failed is reported (the sweep retries it). */
  logger?: Pick<Logger, 'warn'>;
}

export interface StartRunRequest {
  workspace: Workspace;
  agent: AgentRow;
  input: string;
  trigger: Trigger;
  triggerId?: string;
  runLinkId?: string;
  idempotencyKey?: string;
  /** The version the run pins, when not the agent's current one (a retry, a test of another version). */
  version?: number;
  /**
   * Other runs' items this run runs over instead of parsing its input (which then only describes them): a retry's
   * (`retryOf`) or a test run's on past items (`dryRun`). Stored before the run's workflow starts.
   */
  itemsFrom?: { items: { runId: string; seq: number }[]; retryOf?: string; dryRun?: boolean };
  /** Runs once the run is opened and before its workflow starts: what its first step must find (files that came with it). */
  beforeStart?: (run: RunRecord) => Promise<void>;
  /**
   * The API key that asked, when one did, perhaps verified a moment ago rather than on this request: the statement
   * that opens the run checks it again (db/open-run.ts). When that check refuses, `verifyAgain` verifies the key
   * afresh: it throws the refusal (revoked, API access disabled), or returns the workspace as it now is.
   */
  apiKey?: { id: string; verifyAgain: () => Promise<Workspace> };
}

/**
 * The agent as it is now (its hint refreshed), for a run started by `trigger`: 404 when it is gone, 409 when it
 * is not live (a test run takes any state).
 */
export async function currentAgent(
  knex: Knex,
  workspace: Workspace,
  agentId: string,
  trigger: Trigger,
): Promise<AgentRow> {
  const agent = await rereadAgent(knex, workspace.id, agentId);
  if (!agent) throw new ApiError(404, 'agent_not_found', `no agent ${agentId} in this workspace`);
  if (agent.state !== 'live' && trigger !== 'test') {
    const how = trigger === 'api' ? ' through the API' : '';
    throw new ApiError(
      409,
      'agent_not_live',
      `the agent is ${agent.state}; only a live agent can be run${how} (make it live first, or start a test run)`,
      {},
      { state: agent.state },
    );
  }
  return agent;
}

/** The agent was paused, deleted or edited since the caller read it: nothing was opened. */
class AgentChanged extends Error {}

/** The API key that asked was revoked, or its workspace changed, since it was verified: nothing was opened. */
class KeyChanged extends Error {}

/**
 * Checks the input against the agent's input node, then opens and starts the run. The agent may be a row read a
 * moment ago (getAgentHint). If it has been paused, deleted or edited since, the run is not opened (openRun checks
 * in the same statement) and the agent is read again: then refused, or started on its current version. An input
 * refused by the version read is checked again against the current one before the refusal stands. The API key that
 * asked is likewise checked in that statement, and verified afresh if that check refuses.
 */
export async function startRun(
  deps: RunServiceDeps,
  req: StartRunRequest,
): Promise<{ run: RunRecord; created: boolean }> {
  try {
    return await startOnAgentAsRead(deps, req);
  } catch (err) {
    if (!(err instanceof KeyChanged) || !req.apiKey) throw err;
    const workspace = await req.apiKey.verifyAgain();
    try {
      return await startOnAgentAsRead(deps, { ...req, workspace });
    } catch (again) {
      if (again instanceof KeyChanged)
        throw new ApiError(409, 'api_key_changing', 'the API key or its workspace is being changed; try again');
      throw again;
    }
  }
}

/** startRun for the caller as verified: the agent read again if it changed. */
async function startOnAgentAsRead(
  deps: RunServiceDeps,
  req: StartRunRequest,
): Promise<{ run: RunRecord; created: boolean }> {
  try {
    return await checkOpenAndStart(deps, req);
  } catch (err) {
    const inputRefused = err instanceof ApiError && err.code === 'input_unparseable';
    if (!(err instanceof AgentChanged) && !inputRefused) throw err;
    const agent = await currentAgent(deps.knex, req.workspace, req.agent.id, req.trigger);
    if (inputRefused && agent.current_version === req.agent.current_version) throw err;
    try {
      return await checkOpenAndStart(deps, { ...req, agent });
    } catch (again) {
      if (again instanceof AgentChanged)
        throw new ApiError(409, 'agent_changing', 'the agent is being edited; try again');
      throw again;
    }
  }
}

async function checkOpenAndStart(
  deps: RunServiceDeps,
  req: StartRunRequest,
): Promise<{ run: RunRecord; created: boolean }> {
  const { knex } = deps;
  const spec = await getVersion(knex, req.agent.id, req.agent.current_version);
  if (!spec) throw new AgentChanged(); // deleted since it was read
  const inputNode = spec.nodes[0];
  if (inputNode.kind === 'input' && !req.itemsFrom) {
    try {
      parseInput(inputNode, req.input);
    } catch (err) {
      if (err instanceof InputError)
        throw new ApiError(422, 'input_unparseable', `the agent's input node cannot read this input: ${err.message}`);
      throw err;
    }
  }

  const { itemsFrom } = req;
  const beforeStart = itemsFrom
    ? async (run: RunRecord) => {
        await storeItemSources(knex, run.id, itemsFrom.items);
        await req.beforeStart?.(run);
      }
    : req.beforeStart;
  // A run with files is left out of the start sweep until they are stored (see below).
  const opened = await openRun(knex, {
    ...req,
    retryOf: itemsFrom?.retryOf,
    dryRun: itemsFrom?.dryRun,
    startPending: !beforeStart,
    apiKeyId: req.apiKey?.id,
    traceId: currentTraceId(),
  });
  switch (opened.outcome) {
    case 'key_in_flight':
      throw new ApiError(
        409,
        'idempotency_key_in_flight',
        'another request with this Idempotency-Key did not complete; retry it',
      );
    case 'key_reused':
      throw new ApiError(
        422,
        'idempotency_key_reused',
        'this Idempotency-Key was already used with a different request; use a new key for a new run',
      );
    case 'allowance_exhausted':
      throw new ApiError(
        429,
        'plan_allowance_exhausted',
        `the ${req.workspace.plan} plan's runs for this month are used up; upgrade the plan or wait for next month`,
        { 'Retry-After': String(secondsUntilNextMonth()) },
      );
    case 'replayed':
      return { run: (await getRun(knex, req.workspace.id, opened.runId))!, created: false };
    case 'agent_changed':
      throw new AgentChanged();
    case 'key_changed':
      throw new KeyChanged();
  }

  recordRunOpened(opened.run.agent_id, req.trigger);
  if (beforeStart) {
    await beforeStart(opened.run);
    await markStartPending(knex, opened.run.id);
  }
  // The request, delivery, fire or mail that opened the run names it, so the run is found from its trace too.
  setActiveSpanAttributes({ 'cadre.run.id': opened.run.id, 'cadre.agent.id': req.agent.id });
  dispatchRunStart(deps, opened.run, (err) =>
    deps.logger?.warn(
      { run_id: opened.run.id, err: err.message },
      'the run workflow did not start; the start sweep starts it once Temporal answers',
    ),
  );
  return { run: opened.run, created: true };
}

function secondsUntilNextMonth(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.ceil((next - now.getTime()) / 1000);
}
