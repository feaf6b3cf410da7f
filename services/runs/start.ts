// The one door that opens a run. Every way a run starts comes here: the API and the console's Run button
// (api/routes/agents.ts), test runs, retries, run links, Chat Mode, webhooks and forms (services/triggers/deliveries.ts),
// the Inbox, and the engine's own doors: schedule fires, delivery batches, event polls, chains
// (services/triggers/fires.ts) and call_agent steps (activities/agent-calls.ts). Each decision is made here, once, in
// this order:
//  1. May this agent run now: it exists in the workspace and is live (a test run takes any state). A hint read a
//     moment ago that is not live is read again first. Refused: 404 agent_not_found, 409 agent_not_live (a schedule's
//     fire records a run ended `skipped` instead: a fire is a run in the agent's history either way).
//  2. The input: read once, by the input node of the version the run pins, as the run's first step will read it
//     (itemsOfRun). Refused: 422 input_unparseable. Runs over other runs' items (a retry, a test on past items) skip it.
//  3. Opening, in one statement (db/open-run.ts): the idempotency key (a replay finds its run), the agent still as
//     read in 1 and 2 (else read again, once), the API key that asked, the plan allowance. Refused: 409
//     idempotency_key_in_flight, 422 idempotency_key_reused, 429 plan_allowance_exhausted.
//  4. Dispatch of the current run workflow type (model/run-identity.ts currentRunType): the web sends its start after
//     commit (./dispatch.ts); a workflow that asked (schedule, batch, event poll, chain, agent call) starts it as its
//     child, as the same type.
// A refusal is the same ApiError on every door: the API and a webhook answer it as a problem, an engine door records
// its code and message on the agent's timeline (or on the item that called).
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { InputError, itemsOfRun } from '../../model/input-parsing';
import { getVersion, rereadAgent, type AgentRow } from '../../db/agents';
import { markStartPending, openRun, openSkippedRun } from '../../db/open-run';
import { appendRunLog } from '../../db/run-progress';
import { getRun, type RunRecord, type Trigger } from '../../db/runs';
import { storeItemSources } from '../../db/item-sources';
import type { Workspace } from '../../db/workspaces';
import type { TemporalConfig } from '../../temporal.config';
import type { Logger } from 'pino';
import { ApiError } from '../errors';
import { dispatchRunStart } from './dispatch';
import { currentTraceId, setActiveSpanAttributes } from '../telemetry/tracing';
import { recordRunEnded, recordRunOpened } from '../telemetry/metrics';

export { runWorkflowId } from '../../model/run-identity';

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
  /** The time a schedule fired for, kept on its run. */
  firedAt?: Date;
  /** The run, item and node of the call_agent step that starts this run. */
  parent?: { runId: string; itemSeq: number; nodeId: string };
  /** The key alone names the run (a fire, an event): read again differently, it still finds the run it opened. */
  keyNamesRun?: boolean;
}

/**
 * A start asked for by a workflow, which then starts the run's workflow itself as its child (decision 4). Its run is
 * left out of the web's start sweep unless `startPending` (an event poll's runs: the poll's workflow may never start
 * them).
 */
export interface EngineStartRequest extends Omit<StartRunRequest, 'apiKey' | 'itemsFrom' | 'beforeStart'> {
  startPending?: boolean;
}

/** What a run's start needs of the agent: is it there, and may it run now (decision 1). */
export function refusalToRun(agent: Pick<AgentRow, 'state'> | undefined, agentId: string, trigger: Trigger) {
  if (!agent) return new ApiError(404, 'agent_not_found', `no agent ${agentId} in this workspace`);
  if (agent.state === 'live' || trigger === 'test') return undefined;
  const how = trigger === 'api' ? ' through the API' : '';
  return new ApiError(
    409,
    'agent_not_live',
    `the agent is ${agent.state}; only a live agent can be run${how} (make it live first, or start a test run)`,
    {},
    { state: agent.state },
  );
}

/**
 * Decision 2: the input as the run's first step will read it, by the input node of `spec`. Also asked of each
 * delivery a batching trigger accepts, so a delivery its run could not read is refused when it arrives.
 */
export function refusalOfInput(spec: { nodes: { kind: string }[] }, input: string, trigger: Trigger) {
  const inputNode = spec.nodes[0];
  if (inputNode.kind !== 'input') return undefined;
  try {
    itemsOfRun(inputNode as Parameters<typeof itemsOfRun>[0], { input, trigger });
    return undefined;
  } catch (err) {
    if (err instanceof InputError)
      return new ApiError(422, 'input_unparseable', `the agent's input node cannot read this input: ${err.message}`);
    throw err;
  }
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
  const refusal = refusalToRun(agent, agentId, trigger);
  if (refusal) throw refusal;
  return agent!;
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
  deps: Pick<RunServiceDeps, 'knex'> & Partial<RunServiceDeps>,
  req: StartRunRequest,
  dispatch?: Dispatch,
): Promise<{ run: RunRecord; created: boolean }> {
  // A hint of an agent that is not live may be old: it may have gone live since.
  if (refusalToRun(req.agent, req.agent.id, req.trigger))
    req = { ...req, agent: await currentAgent(deps.knex, req.workspace, req.agent.id, req.trigger) };
  try {
    return await checkOpenAndStart(deps, req, dispatch);
  } catch (err) {
    const inputRefused = err instanceof ApiError && err.code === 'input_unparseable';
    if (!(err instanceof AgentChanged) && !inputRefused) throw err;
    const agent = await currentAgent(deps.knex, req.workspace, req.agent.id, req.trigger);
    if (inputRefused && agent.current_version === req.agent.current_version) throw err;
    try {
      return await checkOpenAndStart(deps, { ...req, agent }, dispatch);
    } catch (again) {
      if (again instanceof AgentChanged)
        throw new ApiError(409, 'agent_changing', 'the agent is being edited; try again');
      throw again;
    }
  }
}

/**
 * The door for a workflow that starts the run as its child (a schedule's fire, a batch, an event poll, a chain, an
 * agent call): the same decisions as startRun, refused with the same errors; the run's workflow is the caller's to
 * start, as model/run-identity.ts currentRunType. `created` is false when the key found the run an earlier attempt
 * opened.
 */
export function openRunForWorkflow(knex: Knex, req: EngineStartRequest): Promise<{ run: RunRecord; created: boolean }> {
  return startOnAgentAsRead({ knex }, req, { by: 'workflow', startPending: req.startPending ?? false });
}

/**
 * A schedule's fire that found its agent not live (decision 1): a run that ends `skipped` at once, did nothing and is
 * not counted against the plan, so the fire is a run in the agent's history like any other. Idempotent on the key:
 * `fresh` is false when an earlier attempt made it. When the key already opened a real run (an earlier attempt,
 * before the pause), that run is answered (`status` running): its own first step ends it skipped.
 */
export async function openSkippedFire(
  knex: Knex,
  req: Omit<EngineStartRequest, 'idempotencyKey'> & { idempotencyKey: string; why: string },
): Promise<{ runId: string; status: string; fresh: boolean }> {
  const run = await openSkippedRun(knex, req);
  if (run.fresh) {
    recordRunOpened(req.agent.id, req.trigger);
    recordRunEnded(req.agent.id, 'skipped', 0, { done: 0, failed: 0, needs_review: 0, skipped: 0 });
    await appendRunLog(knex, [{ run_id: run.runId, level: 'warn', message: `run skipped: ${req.why}` }]);
  }
  return run;
}

/** Who sends the run's workflow start: the web (after commit), or the workflow that asked for the run. */
type Dispatch = { by: 'web'; deps: RunServiceDeps } | { by: 'workflow'; startPending: boolean };

async function checkOpenAndStart(
  deps: Pick<RunServiceDeps, 'knex'> & Partial<RunServiceDeps>,
  req: StartRunRequest,
  dispatch: Dispatch = { by: 'web', deps: deps as RunServiceDeps },
): Promise<{ run: RunRecord; created: boolean }> {
  const { knex } = deps;
  const spec = await getVersion(knex, req.agent.id, req.agent.current_version);
  if (!spec) throw new AgentChanged(); // deleted since it was read
  if (!req.itemsFrom) {
    const pinned = req.version === undefined ? spec : await getVersion(knex, req.agent.id, req.version);
    const refusal = pinned && refusalOfInput(pinned, req.input, req.trigger);
    if (refusal) throw refusal;
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
    startPending: dispatch.by === 'web' ? !beforeStart : dispatch.startPending,
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
  if (dispatch.by === 'workflow') return { run: opened.run, created: true };
  dispatchRunStart(dispatch.deps, opened.run, (err) =>
    dispatch.deps.logger?.warn(
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
