import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { planLimits, type Plan } from '../model/plan';

export interface Workspace {
  id: string;
  name: string;
  plan: Plan;
  api_enabled: boolean;
  created_at: Date;
}

export async function createWorkspace(knex: Knex, name: string, plan: Plan = 'free'): Promise<Workspace> {
  const [ws] = await knex('workspaces').insert({ id: randomUUID(), name, plan }).returning('*');
  return ws;
}

/** A workspace in use: one deleted with its owner's account is not found until the account is recovered. */
export async function getWorkspace(knex: Knex, id: string): Promise<Workspace | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  return knex('workspaces').where({ id }).whereNull('deleted_at').first(workspaceColumns);
}

const workspaceColumns = ['id', 'name', 'plan', 'api_enabled', 'created_at'];

/** The ids of workspaces in use, for `whereIn('workspace_id', …)` on rows found without a workspace in hand. */
export const liveWorkspaceIds = (knex: Knex) => knex('workspaces').whereNull('deleted_at').select('id');

export async function setApiEnabled(knex: Knex, id: string, enabled: boolean): Promise<boolean> {
  return (await knex('workspaces').where({ id }).update({ api_enabled: enabled })) > 0;
}

export async function setPlan(knex: Knex, id: string, plan: Plan): Promise<boolean> {
  return (await knex('workspaces').where({ id }).update({ plan, pending_plan: null, plan_changes_at: null })) > 0;
}

/** The billing period is the calendar month (UTC), as the monthly run allowance counts it. */
export function endOfBillingPeriod(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

export async function schedulePlanChange(knex: Knex, id: string, plan: Plan, at: Date): Promise<void> {
  await knex('workspaces').where({ id }).update({ pending_plan: plan, plan_changes_at: at });
}

/** Applies a scheduled downgrade, unless it was withdrawn or replaced meanwhile. */
export async function applyPendingPlan(knex: Knex, id: string, plan: Plan): Promise<boolean> {
  const n = await knex('workspaces')
    .where({ id, pending_plan: plan })
    .update({ plan, pending_plan: null, plan_changes_at: null });
  return n > 0;
}

export async function planStatus(knex: Knex, id: string) {
  return knex('workspaces').where({ id }).first('plan', 'pending_plan', 'plan_changes_at');
}

export const currentMonth = (now = new Date()) => now.toISOString().slice(0, 7);

/**
 * Counts one run against the workspace's monthly allowance, atomically: concurrent starts at the edge
 * never overrun it. Returns false when the allowance is used up.
 */
export async function takeRunAllowance(trx: Knex.Transaction, workspace: Workspace): Promise<boolean> {
  const limit = planLimits[workspace.plan].runsPerMonth;
  const month = currentMonth();
  const result = await trx.raw(
    `insert into workspace_usage (workspace_id, month, runs) values (:ws, :month, 1)
     on conflict (workspace_id, month) do update set runs = workspace_usage.runs + 1
       where :limit::int is null or workspace_usage.runs < :limit::int
     returning runs`,
    { ws: workspace.id, month, limit },
  );
  if (result.rows.length === 0) return false;
  return limit === null || result.rows[0].runs <= limit;
}

export async function runsThisMonth(knex: Knex, workspaceId: string): Promise<number> {
  const row = await knex('workspace_usage').where({ workspace_id: workspaceId, month: currentMonth() }).first('runs');
  return row?.runs ?? 0;
}
