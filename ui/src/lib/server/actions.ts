// Helpers shared by the form actions of several pages.
import { fail, isHttpError, type RequestEvent } from '@sveltejs/kit';
import type { ActionOutcome } from '$lib/action-outcome';
import { api } from './api';

/**
 * Runs the API call behind a form action. A refusal (409 already decided, 422 invalid state change, …) comes back
 * to the form as a notice on the same page rather than replacing the page with an error; `refused` words it for the
 * page (the API's detail, by default).
 */
export async function attempt(call: () => Promise<string>, refused = (message: string, _status: number) => message) {
  try {
    return { ok: true, message: await call() } satisfies ActionOutcome;
  } catch (e) {
    if (isHttpError(e))
      return fail(e.status, { ok: false, message: refused(e.body.message, e.status) } satisfies ActionOutcome);
    throw e;
  }
}

/**
 * A decision that lost to another reviewer's (409: decided already, or the run ended): said plainly, with the API's
 * account of what was decided and by whom. The page reloads on a 409 ($lib/decision-forms) to show it.
 */
const notApplied = (item?: string) => (message: string, status: number) =>
  status === 409 ? `${item ? `Item ${item} — your` : 'Your'} decision was not applied: ${message}.` : message;

export function formText(form: FormData, name: string): string {
  const value = form.get(name);
  return typeof value === 'string' ? value.trim() : '';
}

/** Approve or reject one pending approval: the same form on the run page and on the approvals page. */
export const decideApproval = async ({ request }: RequestEvent) => {
  const form = await request.formData();
  const approvalId = formText(form, 'approval_id');
  const decision = formText(form, 'decision');
  if (!approvalId || !['approve', 'reject', 'approve_with_edits'].includes(decision)) {
    return fail(400, { ok: false, message: 'Choose Approve or Reject.' } satisfies ActionOutcome);
  }
  const comment = formText(form, 'comment') || undefined;
  let edited: unknown;
  if (decision === 'approve_with_edits') {
    try {
      edited = JSON.parse(formText(form, 'arguments'));
    } catch {
      return fail(400, { ok: false, message: 'The edited arguments are not valid JSON.' } satisfies ActionOutcome);
    }
  }
  return attempt(async () => {
    await api.decideApproval(approvalId, decision as 'approve' | 'reject' | 'approve_with_edits', comment, edited);
    return decision === 'reject'
      ? 'Rejected.'
      : decision === 'approve'
        ? 'Approved: the run continues.'
        : 'Approved with your edits: the run continues with them.';
  }, notApplied());
};

/** A reviewer's decision on a flagged item: accept (optionally with an edited output), reject, or send on. */
export const decideReview = async ({ request }: RequestEvent) => {
  const form = await request.formData();
  const reviewId = formText(form, 'review_id');
  const action = formText(form, 'action');
  if (!reviewId || !['accept', 'reject', 'send_to'].includes(action)) {
    return fail(400, { ok: false, message: 'Choose Accept, Reject or Send to.' } satisfies ActionOutcome);
  }
  let output: Record<string, unknown> | undefined;
  const edited = formText(form, 'output');
  if (action === 'accept' && edited) {
    try {
      output = JSON.parse(edited);
    } catch {
      return fail(400, { ok: false, message: 'The edited output is not valid JSON.' } satisfies ActionOutcome);
    }
  }
  const reason = formText(form, 'reason') || undefined;
  const nodeId = formText(form, 'node_id') || undefined;
  return attempt(
    async () => {
      await api.decideReview(reviewId, {
        action: action as 'accept' | 'reject' | 'send_to',
        ...(output ? { output } : {}),
        ...(action === 'reject' && reason ? { reason } : {}),
        ...(action === 'send_to' && nodeId ? { node_id: nodeId } : {}),
      });
      return action === 'reject'
        ? 'Rejected: the item fails with your reason.'
        : action === 'send_to'
          ? `Sent on to "${nodeId}".`
          : output
            ? 'Accepted with your output.'
            : 'Accepted.';
    },
    notApplied(formText(form, 'item')),
  );
};
