// Starting a run: the one path shared by the API, test runs and (later) triggers. The run row, its
// idempotency key and the plan allowance are written in one transaction; the workflow starts after commit.
import { createHash, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { Knex } from 'knex';
import { InputError, parseInput } from '../activities/input-parsing';
import { getVersion, type AgentRow } from '../db/agents';
import { getRun, type RunRecord, type Trigger } from '../db/runs';
import { takeRunAllowance, type Workspace } from '../db/workspaces';
import type { TemporalConfig } from '../temporal.config';
import type { agentRun } from '../workflows/agent-run';
import { ApiError } from './problem';

const workspaceKey = defineSearchAttributeKey('CadreWorkspaceId', SearchAttributeType.KEYWORD);
const agentKey = defineSearchAttributeKey('CadreAgentId', SearchAttributeType.KEYWORD);
const triggerKey = defineSearchAttributeKey('CadreTrigger', SearchAttributeType.KEYWORD);

export const runWorkflowId = (runId: string) => `run-${runId}`;

export interface RunServiceDeps {
  knex: Knex;
  temporal: Client;
  temporalConfig: TemporalConfig;
}

export interface StartRunRequest {
  workspace: Workspace;
  agent: AgentRow;
  input: string;
  trigger: Trigger;
  idempotencyKey?: string;
}

export async function startRun(
  deps: RunServiceDeps,
  req: StartRunRequest,
): Promise<{ run: RunRecord; created: boolean }> {
  const { knex, temporal, temporalConfig } = deps;
  const spec = (await getVersion(knex, req.agent.id, req.agent.current_version))!;
  const inputNode = spec.nodes[0];
  if (inputNode.kind === 'input') {
    try {
      parseInput(inputNode, req.input);
    } catch (err) {
      if (err instanceof InputError)
        throw new ApiError(422, 'input_unparseable', `the agent's input node cannot read this input: ${err.message}`);
      throw err;
    }
  }
  const requestHash = createHash('sha256')
    .update(JSON.stringify([req.agent.id, req.input]))
    .digest('hex');
  const runId = randomUUID();

  const outcome = await knex.transaction(async (trx) => {
    const inserted = await trx('runs')
      .insert({
        id: runId,
        workspace_id: req.workspace.id,
        agent_id: req.agent.id,
        agent_version: req.agent.current_version,
        trigger: req.trigger,
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
      if (!existing) {
        throw new ApiError(
          409,
          'idempotency_key_in_flight',
          'another request with this Idempotency-Key did not complete; retry it',
        );
      }
      if (existing.request_hash !== requestHash) {
        throw new ApiError(
          422,
          'idempotency_key_reused',
          'this Idempotency-Key was already used with a different request; use a new key for a new run',
        );
      }
      return { id: existing.id as string, created: false, row: undefined };
    }
    if (!(await takeRunAllowance(trx, req.workspace))) {
      throw new ApiError(
        429,
        'plan_allowance_exhausted',
        `the ${req.workspace.plan} plan's runs for this month are used up; upgrade the plan or wait for next month`,
        {
          'Retry-After': String(secondsUntilNextMonth()),
        },
      );
    }
    return { id: runId, created: true, row: inserted[0] as Omit<RunRecord, 'agent_name'> };
  });

  if (outcome.created) {
    try {
      await temporal.workflow.start<typeof agentRun>('agentRun', {
        workflowId: runWorkflowId(outcome.id),
        taskQueue: temporalConfig.taskQueue,
        args: [{ runId: outcome.id }],
        typedSearchAttributes: [
          { key: workspaceKey, value: req.workspace.id },
          { key: agentKey, value: req.agent.id },
          { key: triggerKey, value: req.trigger },
        ],
      });
    } catch (err) {
      await knex('runs')
        .where({ id: outcome.id })
        .update({
          status: 'failed',
          error: `the run could not be started: ${(err as Error).message}`,
          ended_at: knex.fn.now(),
        });
      throw new ApiError(
        503,
        'engine_unavailable',
        'the run engine (Temporal) is not reachable right now; the run was not started, try again shortly',
      );
    }
  }
  // A new run is answered from the row just written; a replayed one is read back.
  const run = outcome.row
    ? { ...outcome.row, agent_name: req.agent.name }
    : (await getRun(knex, req.workspace.id, outcome.id))!;
  return { run, created: outcome.created };
}

function secondsUntilNextMonth(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return Math.ceil((next - now.getTime()) / 1000);
}
