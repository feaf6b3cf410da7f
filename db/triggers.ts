// Trigger records: schedules, webhooks, forms and chains of an agent. Their settings are a jsonb `config`
// validated by model/trigger.ts; a webhook's signing secret is stored sealed (db/secret-box.ts).
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { liveWorkspaceIds } from './workspaces';
import { isUuid } from './runs';
import type { TriggerKind } from '../model/trigger';
import type { AgentState } from './agents';

export interface TriggerRow {
  id: string;
  workspace_id: string;
  agent_id: string;
  kind: TriggerKind;
  name: string;
  config: Record<string, unknown>;
  secret_encrypted: string | null;
  source_agent_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertTrigger(
  knex: Knex | Knex.Transaction,
  t: Pick<
    TriggerRow,
    'workspace_id' | 'agent_id' | 'kind' | 'name' | 'config' | 'secret_encrypted' | 'source_agent_id'
  >,
): Promise<TriggerRow> {
  const [row] = await knex('triggers')
    .insert({ ...t, id: randomUUID(), config: JSON.stringify(t.config) })
    .returning('*');
  return row;
}

export async function updateTrigger(
  knex: Knex | Knex.Transaction,
  id: string,
  t: Pick<TriggerRow, 'name' | 'config' | 'source_agent_id'>,
): Promise<TriggerRow> {
  const [row] = await knex('triggers')
    .where({ id })
    .update({ ...t, config: JSON.stringify(t.config), updated_at: knex.fn.now() })
    .returning('*');
  return row;
}

export async function setTriggerSecret(knex: Knex, id: string, sealed: string): Promise<void> {
  await knex('triggers').where({ id }).update({ secret_encrypted: sealed, updated_at: knex.fn.now() });
}

/** A trigger of the given workspace; another workspace's trigger is simply not found. */
export async function getTrigger(knex: Knex, workspaceId: string, id: string): Promise<TriggerRow | undefined> {
  if (!isUuid(id)) return undefined;
  return knex('triggers').where({ id, workspace_id: workspaceId }).first();
}

/** For the public endpoints (webhooks, forms) and the worker, which know only the trigger id. */
export async function findTrigger(knex: Knex, id: string): Promise<TriggerRow | undefined> {
  if (!isUuid(id)) return undefined;
  return knex('triggers').where({ id }).whereIn('workspace_id', liveWorkspaceIds(knex)).first();
}

/** findTrigger with its agent's state, in one query: what a public endpoint checks on every delivery. */
export async function findTriggerWithAgentState(
  knex: Knex,
  id: string,
): Promise<(TriggerRow & { agent_state: AgentState }) | undefined> {
  if (!isUuid(id)) return undefined;
  return knex('triggers as t')
    .join('agents as a', 'a.id', 't.agent_id')
    .where('t.id', id)
    .whereIn('t.workspace_id', liveWorkspaceIds(knex))
    .first('t.*', 'a.state as agent_state');
}

export function listTriggers(knex: Knex, agentId: string): Promise<TriggerRow[]> {
  return knex('triggers').where({ agent_id: agentId }).orderBy('created_at');
}

export async function deleteTrigger(knex: Knex | Knex.Transaction, id: string): Promise<void> {
  await knex('triggers').where({ id }).delete();
}

/** Every schedule and event trigger with its agent's state: what Temporal's schedules must match. */
export function listScheduleTriggers(knex: Knex): Promise<(TriggerRow & { agent_state: AgentState })[]> {
  return knex('triggers')
    .join('agents', 'agents.id', 'triggers.agent_id')
    .whereIn('triggers.kind', ['schedule', 'event'])
    .select('triggers.*', 'agents.state as agent_state');
}

/** Chain triggers fired by the runs of `sourceAgentId`. */
export function chainTriggersFrom(knex: Knex, sourceAgentId: string): Promise<TriggerRow[]> {
  return knex('triggers').where({ kind: 'chain', source_agent_id: sourceAgentId }).orderBy('created_at');
}

/** The workspace's chain edges (source agent → agent it starts), for refusing cycles. */
export function chainEdges(knex: Knex, workspaceId: string): Promise<{ id: string; from: string; to: string }[]> {
  return knex('triggers')
    .where({ workspace_id: workspaceId, kind: 'chain' })
    .select('id', 'source_agent_id as from', 'agent_id as to');
}
