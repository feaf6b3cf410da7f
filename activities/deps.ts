import type { Knex } from 'knex';
import type { Client } from '@temporalio/client';
import type { CadreConfig } from '../cadre.config';
import { getVersion } from '../db/agents';
import type { AgentSpec } from '../model/agent';

export interface ActivityDeps {
  knex: Knex;
  config: CadreConfig;
  /** For call_agent nodes, which start other runs. */
  temporal?: Client;
}

export async function loadSpec(knex: Knex, agentId: string, version: number): Promise<AgentSpec> {
  const spec = await getVersion(knex, agentId, version); // cached: versions are immutable
  if (!spec) throw new Error(`agent ${agentId} has no version ${version}`);
  return spec;
}

export interface RunRow {
  id: string;
  workspace_id: string;
  agent_id: string;
  agent_version: number;
  status: string;
  trigger: string;
  trigger_id: string | null;
  input: string;
  error: string | null;
  total: number;
  /** A test run on past items (activities/effects-ledger.ts). */
  dry_run?: boolean;
  /** The run whose failed items this run retries. */
  retry_of?: string | null;
}

export async function loadRun(knex: Knex, runId: string): Promise<RunRow> {
  const run = await knex('runs').where({ id: runId }).first();
  if (!run) throw new Error(`run ${runId} does not exist`);
  return run;
}

/** A run as its opening and closing phases read it: with its agent's state and whether chains start from it. */
export interface PhaseRun extends RunRow {
  agent_state?: string;
  /** False when no chain trigger starts from the run's agent. */
  chained?: boolean;
}

export async function loadPhaseRun(knex: Knex, runId: string): Promise<PhaseRun> {
  const run = await knex('runs as r')
    .join('agents as a', 'a.id', 'r.agent_id')
    .where('r.id', runId)
    .first(
      'r.*',
      'a.state as agent_state',
      knex.raw(
        `exists (select 1 from triggers t where t.kind = 'chain' and t.source_agent_id = r.agent_id) as chained`,
      ),
    );
  if (!run) throw new Error(`run ${runId} does not exist`);
  return run;
}

export function nodeById(spec: AgentSpec, nodeId: string) {
  const node = spec.nodes.find((n) => n.id === nodeId);
  if (!node) throw new Error(`node "${nodeId}" is not in the agent's graph`);
  return node;
}
