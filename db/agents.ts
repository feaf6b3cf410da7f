// Agents and their immutable versions. Every update writes a new version; runs pin the version they started
// with, so editing an agent never changes a running run.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AgentSpec } from '../model/agent';
import { decodeTimeCursor, timeCursorPage } from './runs';
import { recordEvent } from './timeline';
import { unusableConnections } from './connections';
import { unresolvedSkills } from './skills';
import { parseSkillRef } from '../model/skill';

export type AgentState = 'draft' | 'ready' | 'live' | 'paused';

export interface AgentRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  state: AgentState;
  current_version: number;
  tested_version: number | null;
  created_at: Date;
  updated_at: Date;
}

/** The lifecycle of spec §3, with the transitions it leaves open chosen as a user would expect. */
export const allowedTransitions: Record<AgentState, AgentState[]> = {
  draft: ['ready'],
  ready: ['live', 'draft'],
  live: ['paused'],
  paused: ['live'],
};

export class TransitionError extends Error {
  constructor(
    readonly from: AgentState,
    readonly to: AgentState,
    message: string,
  ) {
    super(message);
  }
}

export class AgentLimitError extends Error {}

/**
 * Creates an agent at version 1, saved by `savedBy` (a person's email or an API key's name, as updateAgent's). With
 * `limit` (the plan's number of agents), the workspace row is locked while agents are counted, so concurrent
 * creates at the edge never make more than the limit.
 */
export async function createAgent(
  knex: Knex,
  workspaceId: string,
  spec: AgentSpec,
  { limit = null, savedBy }: { limit?: number | null; savedBy?: string } = {},
): Promise<AgentRow> {
  return knex.transaction(async (trx) => {
    if (limit !== null) {
      await trx('workspaces').where({ id: workspaceId }).forUpdate().first('id');
      if ((await countAgents(trx, workspaceId)) >= limit) throw new AgentLimitError();
    }
    const id = randomUUID();
    const [agent] = await trx('agents')
      .insert({ id, workspace_id: workspaceId, name: spec.name, description: spec.description, current_version: 1 })
      .returning('*');
    await trx('agent_versions').insert({
      agent_id: id,
      version: 1,
      spec: JSON.stringify(spec),
      saved_by: savedBy ?? null,
    });
    return agent;
  });
}

export async function getAgent(knex: Knex, workspaceId: string, id: string): Promise<AgentRow | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  return knex('agents').where({ id, workspace_id: workspaceId }).first();
}

// Agent rows as this process last read them, for starting runs: a hint that saves a query per start. Never
// trusted: openRun opens a run only if the agent is still live at the hinted version, and a refusal re-reads it.
const recentAgents = new Map<string, AgentRow>();
const recentAgentsMax = 1000;

/** The agent, maybe as read a moment ago (see recentAgents): for a start whose statement checks it again. */
export async function getAgentHint(knex: Knex, workspaceId: string, id: string): Promise<AgentRow | undefined> {
  const hint = recentAgents.get(id);
  if (hint && hint.workspace_id === workspaceId) return hint;
  return rereadAgent(knex, workspaceId, id);
}

/** The agent as it is now; the hint is updated (or dropped, when the agent is gone). */
export async function rereadAgent(knex: Knex, workspaceId: string, id: string): Promise<AgentRow | undefined> {
  const row = await getAgent(knex, workspaceId, id);
  recentAgents.delete(id);
  if (row) {
    if (recentAgents.size >= recentAgentsMax) recentAgents.delete(recentAgents.keys().next().value!);
    recentAgents.set(id, row);
  }
  return row;
}

/** A page of the workspace's agents, newest first. */
export async function listAgents(
  knex: Knex,
  workspaceId: string,
  page: { limit: number; cursor?: string },
): Promise<{ data: AgentRow[]; next_cursor: string | null }> {
  const q = knex('agents')
    .where({ workspace_id: workspaceId })
    .select('agents.*', knex.raw('agents.created_at::text as cursor_at'));
  if (page.cursor) q.whereRaw('(created_at, id) < (?::timestamptz, ?::uuid)', decodeTimeCursor(page.cursor));
  const rows: (AgentRow & { cursor_at: string })[] = await q
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(page.limit + 1);
  return timeCursorPage(rows, page.limit);
}

/** Whether an agent of the workspace other than `exceptId` has this name, letter case aside. */
export async function otherAgentNamed(
  knex: Knex,
  workspaceId: string,
  name: string,
  exceptId?: string,
): Promise<boolean> {
  const q = knex('agents').where({ workspace_id: workspaceId }).whereRaw('lower(name) = lower(?)', [name]);
  if (exceptId) q.whereNot({ id: exceptId });
  return Boolean(await q.first('id'));
}

export async function countAgents(knex: Knex, workspaceId: string): Promise<number> {
  const row = await knex('agents')
    .where({ workspace_id: workspaceId })
    .count<{ count: number }[]>('* as count')
    .first();
  return Number(row?.count ?? 0);
}

// Versions never change once written, so a process can keep the ones it has read.
const versionCache = new Map<string, AgentSpec>();

export async function getVersion(knex: Knex, agentId: string, version: number): Promise<AgentSpec | undefined> {
  const key = `${agentId}@${version}`;
  const cached = versionCache.get(key);
  if (cached) return cached;
  const spec: AgentSpec | undefined = (await knex('agent_versions').where({ agent_id: agentId, version }).first('spec'))
    ?.spec;
  if (spec) versionCache.set(key, spec);
  return spec;
}

export function listVersions(
  knex: Knex,
  agentId: string,
): Promise<{ version: number; created_at: Date; saved_by: string | null }[]> {
  return knex('agent_versions')
    .where({ agent_id: agentId })
    .orderBy('version', 'desc')
    .select('version', 'created_at', 'saved_by');
}

/**
 * A save made on a version that is not the newest: `current` is the newest, saved by `savedBy`. `base` may also be
 * one the agent has not reached (`base > current`), which no editor can have opened.
 */
export class StaleVersionError extends Error {
  constructor(
    readonly base: number,
    readonly current: number,
    readonly savedBy: string | null,
    readonly savedAt: Date | null,
  ) {
    super(`version ${current} is the newest, not version ${base}`);
  }
}

/** A save of an agent deleted since the caller read it. */
export class AgentGoneError extends Error {
  constructor(readonly agentId: string) {
    super(`agent ${agentId} was deleted`);
  }
}

export interface SaveOptions {
  /** The version the edit started from: the save is refused (StaleVersionError) unless it is still the newest. */
  baseVersion?: number;
  /** Who saves it: a person's email or an API key's name. */
  savedBy?: string;
  /** The timeline entry of the save (kind `agent_updated`), written in its transaction: a save is never without it. */
  event?: (saved: AgentRow) => { message: string; details?: Record<string, unknown> };
}

/**
 * Saves a new version. A Ready agent goes back to Draft: the new version has not been tested. With `baseVersion`
 * (the version the editor started from), the save is refused with StaleVersionError unless that is still the newest:
 * checked in the update itself, so of two saves on one version exactly one is taken. An agent deleted before the
 * save lands (the update waits for a delete under way) is AgentGoneError, nothing written; a delete that lands after
 * it removes the agent with every version and timeline entry, the new ones included.
 */
export async function updateAgent(
  knex: Knex,
  agent: AgentRow,
  spec: AgentSpec,
  { baseVersion, savedBy, event }: SaveOptions = {},
): Promise<AgentRow> {
  return knex.transaction(async (trx) => {
    const [row]: AgentRow[] = await trx('agents')
      .where({ id: agent.id })
      .modify((q) => {
        if (baseVersion !== undefined) q.andWhere({ current_version: baseVersion });
      })
      .update({
        name: spec.name,
        description: spec.description,
        current_version: trx.raw('current_version + 1'),
        state: trx.raw(`case when state = 'ready' then 'draft' else state end`),
        updated_at: trx.fn.now(),
      })
      .returning('*');
    if (!row) {
      const now: Pick<AgentRow, 'current_version'> | undefined = await trx('agents')
        .where({ id: agent.id })
        .first('current_version');
      if (!now || baseVersion === undefined) throw new AgentGoneError(agent.id);
      const newest = await trx('agent_versions')
        .where({ agent_id: agent.id, version: now.current_version })
        .first('saved_by', 'created_at');
      throw new StaleVersionError(
        baseVersion,
        now.current_version,
        newest?.saved_by ?? null,
        newest?.created_at ?? null,
      );
    }
    await trx('agent_versions').insert({
      agent_id: agent.id,
      version: row.current_version,
      spec: JSON.stringify(spec),
      saved_by: savedBy ?? null,
    });
    if (event)
      await recordEvent(trx, {
        workspace_id: row.workspace_id,
        agent_id: row.id,
        kind: 'agent_updated',
        ...event(row),
      });
    return row;
  });
}

/**
 * `resumePositions`: for an agent resumed from a pause, where each of its `skip_missed` event triggers starts again,
 * read at the resume (schedules/event-marks.ts); written in one transaction with the state.
 */
export async function setAgentState(
  knex: Knex,
  agent: AgentRow,
  to: AgentState,
  resumePositions: ReadonlyMap<string, string> = new Map(),
): Promise<AgentRow> {
  const allowed = allowedTransitions[agent.state];
  if (!allowed.includes(to)) {
    throw new TransitionError(
      agent.state,
      to,
      `agent is ${agent.state}; from ${agent.state} it can move to ${allowed.join(' or ')}, not ${to}`,
    );
  }
  if (agent.state === 'draft' && to === 'ready' && agent.tested_version !== agent.current_version) {
    throw new TransitionError(
      agent.state,
      to,
      `version ${agent.current_version} has no successful test run yet: start a test run, then mark the agent ready`,
    );
  }
  if (to === 'ready' || to === 'live') {
    const spec = await getVersion(knex, agent.id, agent.current_version);
    const missing = await unusableConnections(knex, agent.workspace_id, spec?.connections ?? []);
    if (missing.length > 0) {
      const names = missing.map((n) => `"${n}"`).join(', ');
      throw new TransitionError(
        agent.state,
        to,
        `the agent acts through ${names}, not connected in this workspace: connect ${missing.length > 1 ? 'them' : 'it'} in Integrations first`,
      );
    }
    const skills = await unresolvedSkills(knex, agent.workspace_id, (spec?.skills ?? []).map(parseSkillRef));
    if (skills.length > 0)
      throw new TransitionError(agent.state, to, `${skills.join('; ')}: upload it in Skills first`);
  }
  return knex.transaction(async (trx) => {
    const [row] = await trx('agents')
      .where({ id: agent.id })
      .update({ state: to, updated_at: trx.fn.now() })
      .returning('*');
    if (to === 'live' && agent.state === 'paused') await forgetMissedEvents(trx, agent.id, resumePositions);
    return row;
  });
}

/**
 * The operator's override (`cadre agent set-state`): any agent to live or paused, past the lifecycle's conditions,
 * with what a resume from a pause does to event triggers as setAgentState does it. Undefined when there is no agent.
 */
export async function overrideAgentState(
  knex: Knex,
  id: string,
  to: 'live' | 'paused',
  resumePositions: ReadonlyMap<string, string> = new Map(),
): Promise<AgentRow | undefined> {
  return knex.transaction(async (trx) => {
    const before: AgentRow | undefined = await trx('agents').where({ id }).forUpdate().first();
    if (!before) return undefined;
    const [row] = await trx('agents').where({ id }).update({ state: to, updated_at: trx.fn.now() }).returning('*');
    if (to === 'live' && before.state === 'paused') await forgetMissedEvents(trx, id, resumePositions);
    return row as AgentRow;
  });
}

/**
 * Back from a pause, an event trigger starts from what happens next: what arrived while the agent was paused does
 * not start a flood of runs at once, unless the trigger says to deliver it (`on_resume: deliver_missed`). It starts
 * from its position at the resume when that was read; otherwise its cursor goes, and its first poll marks where it
 * starts, as a new trigger's does.
 */
async function forgetMissedEvents(knex: Knex, agentId: string, positions: ReadonlyMap<string, string>) {
  const skipping: string[] = await knex('triggers')
    .where({ agent_id: agentId, kind: 'event' })
    .whereRaw(`coalesce(config->>'on_resume', 'skip_missed') = 'skip_missed'`)
    .pluck('id');
  const marked = skipping.filter((id) => positions.has(id));
  const unmarked = skipping.filter((id) => !positions.has(id));
  if (unmarked.length > 0) await knex('trigger_cursors').whereIn('trigger_id', unmarked).delete();
  if (marked.length > 0)
    await knex('trigger_cursors')
      .insert(
        marked.map((id) => ({ trigger_id: id, cursor: positions.get(id), last_error: null, polled_at: knex.fn.now() })),
      )
      .onConflict('trigger_id')
      .merge(['cursor', 'last_error', 'polled_at']);
}

export async function deleteAgent(knex: Knex, workspaceId: string, id: string): Promise<boolean> {
  return (await knex('agents').where({ id, workspace_id: workspaceId }).delete()) > 0;
}
