import { appendRunLog, refreshRunCounts } from '../db/run-progress';
import { recordEvent } from '../db/timeline';
import type { ActivityDeps } from './deps';
import type { Decision } from './step-results';
import { approvalWait } from '../services/telemetry/metrics';

export function createApprovalActivities({ knex }: ActivityDeps) {
  return {
    /** Persists a reviewer's decision (or the policy's, on timeout) before the run acts on it. */
    async recordDecision({
      approvalId,
      decision,
      status,
    }: {
      approvalId: string;
      decision: Decision;
      status: 'approved' | 'rejected' | 'timed_out' | 'escalated';
    }): Promise<void> {
      const waited = await knex.transaction(async (trx) => {
        const [row] = await trx('approvals')
          .where({ id: approvalId })
          .whereIn('status', ['pending', 'escalated'])
          .update({
            status,
            decided_by: decision.by,
            reason: decision.reason ?? null,
            decided_arguments: decision.arguments ? JSON.stringify(decision.arguments) : null,
            decided_at: status === 'escalated' ? null : trx.fn.now(),
          })
          .returning(['run_id', 'item_seq', 'node_id', 'workspace_id', 'tool', 'requested_at', 'decided_at']);
        if (!row) return undefined;
        if (status !== 'escalated') {
          // A model step can wait on several calls at once: the item waits until the last is decided.
          await trx('run_items')
            .where({ run_id: row.run_id, seq: row.item_seq, status: 'needs_review' })
            .whereNotExists(
              trx('approvals')
                .where({ run_id: row.run_id, item_seq: row.item_seq })
                .whereIn('status', ['pending', 'escalated']),
            )
            .update({ status: 'running' });
        }
        await appendRunLog(trx, [
          {
            run_id: row.run_id,
            level: 'info',
            node_id: row.node_id,
            item_seq: row.item_seq,
            message: `approval ${status} by ${decision.by}${decision.reason ? `: ${decision.reason}` : ''}`,
          },
        ]);
        await refreshRunCounts(trx, row.run_id);
        const run = await trx('runs').where({ id: row.run_id }).first('agent_id');
        await recordEvent(trx, {
          workspace_id: row.workspace_id,
          agent_id: run.agent_id,
          kind: 'approval_decided',
          run_id: row.run_id,
          message: `${row.tool} on item ${row.item_seq + 1}: ${status.replace('_', ' ')} by ${decision.by}`,
          details: { approval_id: approvalId, status, by: decision.by, reason: decision.reason ?? null },
        });
        return row.decided_at ? (row.decided_at.getTime() - row.requested_at.getTime()) / 1000 : undefined;
      });
      if (waited !== undefined) approvalWait.observe({ outcome: status }, Math.max(0, waited));
    },
  };
}
