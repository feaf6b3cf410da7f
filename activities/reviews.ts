// A reviewer's decision on a flagged item, applied by the page workflow that holds the item: the item is done
// (as it is, going on from the flag node, or with the reviewer's output), fails with the reviewer's reason, or
// continues from a node the reviewer names. Idempotent: a decision already applied is not applied again.
import { ApplicationFailure } from '@temporalio/common';
import { appendRunLog, refreshRunCounts } from '../db/run-progress';
import type { ReviewDecision } from '../model/review';
import { loadRun, loadSpec, type ActivityDeps } from './deps';

const statusOf = { accept: 'accepted', reject: 'rejected', send_to: 'sent_on' } as const;

export function createReviewActivities({ knex }: ActivityDeps) {
  return {
    async applyReview({
      runId,
      reviewId,
      decision,
      by,
    }: {
      runId: string;
      reviewId: string;
      decision: ReviewDecision;
      by: string;
    }): Promise<'applied' | 'already_decided'> {
      const run = await loadRun(knex, runId);
      const spec = await loadSpec(knex, run.agent_id, run.agent_version);
      return knex.transaction(async (trx) => {
        const review = await trx('item_reviews').where({ id: reviewId, run_id: runId }).forUpdate().first();
        if (!review || review.status !== 'pending') return 'already_decided';
        const flag = spec.nodes.find((n) => n.id === review.node_id);
        let item: Record<string, unknown>;
        let said: string;
        if (decision.action === 'reject') {
          item = {
            status: 'failed',
            error: `rejected by ${by}: ${decision.reason ?? 'no reason given'}`,
            node_id: null,
          };
          said = `rejected by ${by}: ${decision.reason ?? ''}`;
        } else if (decision.action === 'send_to') {
          if (!spec.nodes.some((n) => n.id === decision.node_id)) {
            throw ApplicationFailure.nonRetryable(`the agent has no node "${decision.node_id}"`, 'UnknownNode');
          }
          item = { status: 'pending', error: null, node_id: decision.node_id };
          said = `sent on to "${decision.node_id}" by ${by}`;
        } else if (decision.output) {
          item = {
            status: 'done',
            error: null,
            node_id: null,
            output: JSON.stringify(decision.output),
            output_node: review.node_id,
          };
          said = `accepted with an edited output by ${by}`;
        } else {
          // Accepted as it is: it goes on from the flag node, as if it had not been flagged.
          const next = flag && 'next' in flag ? (flag.next ?? null) : null;
          item = next
            ? { status: 'pending', error: null, node_id: next }
            : { status: 'done', error: null, node_id: null };
          said = `accepted by ${by}`;
        }
        await trx('run_items')
          .where({ run_id: runId, seq: review.item_seq })
          .update({ ...item, updated_at: trx.fn.now() });
        await trx('item_reviews')
          .where({ id: reviewId })
          .update({
            status: statusOf[decision.action],
            decision: JSON.stringify(decision),
            decided_by: by,
            decided_at: trx.fn.now(),
          });
        await appendRunLog(trx, [
          {
            run_id: runId,
            level: 'info',
            node_id: review.node_id,
            item_seq: review.item_seq,
            message: `review: ${said}`,
          },
        ]);
        await refreshRunCounts(trx, runId);
        return 'applied';
      });
    },
  };
}
