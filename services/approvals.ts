// Deciding an approval: the one path shared by POST /v1/approvals/{id}/decision and Chat Mode's decide_approval
// tool. The decision reaches the run's workflow as an update, which applies it (or refuses one already decided).
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { getApproval } from '../db/runs';
import { decideUpdate } from '../workflows/contracts';
import { ApiError } from './errors';

export interface ApprovalDecision {
  decision: 'approve' | 'reject' | 'approve_with_edits';
  arguments?: Record<string, unknown>;
  comment?: string;
}

/** Applies the decision of `actor` (who is named on the approval) and answers the approval as it now stands. */
export async function decideApproval(
  deps: { knex: Knex; temporal: Client },
  workspaceId: string,
  approvalId: string,
  body: ApprovalDecision,
  actor: string,
) {
  const approval = await getApproval(deps.knex, workspaceId, approvalId);
  if (!approval) throw new ApiError(404, 'approval_not_found', `no approval ${approvalId} in this workspace`);
  if (body.decision === 'approve_with_edits' && !body.arguments) {
    throw new ApiError(422, 'arguments_required', '"approve_with_edits" needs the edited "arguments"');
  }
  refuseClosed(approval);
  try {
    await deps.temporal.workflow.getHandle(approval.workflow_id).executeUpdate(decideUpdate, {
      args: [
        {
          approvalId: approval.id,
          approve: body.decision !== 'reject',
          arguments: body.decision === 'approve_with_edits' ? body.arguments : undefined,
          by: actor,
          reason: body.comment,
        },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError) && !(err instanceof WorkflowUpdateFailedError)) throw err;
    refuseClosed((await getApproval(deps.knex, workspaceId, approval.id)) ?? approval);
    // Someone else decided first (their decision may still be on its way to the database, so the workflow says whose
    // it was)…
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === 'ApprovalDecided') {
      const first = cause.details?.[0] as { approve?: boolean; by?: string } | undefined;
      throw alreadyDecided(first?.approve === false ? 'rejected' : 'approved', first?.by);
    }
    // …or the run has ended, or is ending (its workflow is gone, or refuses updates while it is cancelled).
    throw runEnded();
  }
  return (await getApproval(deps.knex, workspaceId, approval.id))!;
}

const runEnded = () =>
  new ApiError(409, 'approval_closed', 'the run this approval belongs to has ended; it can no longer be decided');

/** Says what the decision was and who took it, so a reviewer who was a moment late knows what happened. */
const alreadyDecided = (status: string, by: string | null | undefined) =>
  new ApiError(409, 'approval_decided', `this approval is already ${status.replace('_', ' ')}${by ? ` by ${by}` : ''}`);

/** 409 unless the approval still waits on a person: decided already, or closed with its run. */
function refuseClosed(approval: { status: string; decided_by?: string | null }) {
  if (approval.status === 'cancelled') throw runEnded();
  if (!['pending', 'escalated'].includes(approval.status)) throw alreadyDecided(approval.status, approval.decided_by);
}
