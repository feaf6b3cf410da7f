import { recordAudit } from '../db/audit';
import { applyPendingPlan } from '../db/workspaces';
import type { Plan } from '../model/plan';
import type { ActivityDeps } from './deps';

export function createPlanChangeActivities({ knex }: ActivityDeps) {
  return {
    async applyPlanChange({
      workspaceId,
      plan,
    }: {
      workspaceId: string;
      plan: Plan;
    }): Promise<'applied' | 'withdrawn'> {
      if (!(await applyPendingPlan(knex, workspaceId, plan))) return 'withdrawn';
      await recordAudit(knex, {
        workspace_id: workspaceId,
        actor: 'system',
        action: 'plan.changed',
        details: { to: plan },
      });
      return 'applied';
    },
  };
}
