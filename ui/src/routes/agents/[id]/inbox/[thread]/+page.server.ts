// One Inbox thread: the requests in order with the run each started, the replies sent, and the replies drafted that
// wait for a reviewer, who can send one as it is, edit it first, or discard it.
import { fail, error } from '@sveltejs/kit';
import { attempt, formText } from '$lib/server/actions';
import { api } from '$lib/server/api';
import { inboxApi } from '$lib/server/inbox-api';
import type { ActionOutcome } from '$lib/action-outcome';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => {
  const thread = await inboxApi.thread(params.thread);
  if (thread.agent_id !== params.id) error(404, 'This thread is not in this agent’s Inbox.');
  const waiting = thread.messages.flatMap((m) => (m.run?.status === 'needs_review' ? [m.run.id] : []));
  const drafts = await inboxApi.draftsOf(waiting);
  return {
    thread,
    drafts: drafts.map((d) => ({
      id: d.id,
      run_id: d.run_id,
      text: String((d.arguments as { text?: unknown })?.text ?? ''),
    })),
  };
};

export const actions: Actions = {
  reply: async ({ request, params }) => {
    const form = await request.formData();
    const approvalId = formText(form, 'approval_id');
    const original = formText(form, 'original');
    const text = formText(form, 'text');
    if (formText(form, 'decision') === 'discard')
      return attempt(async () => {
        await api.decideApproval(approvalId, 'reject', 'discarded in the Inbox');
        return 'Reply discarded: nothing was sent.';
      });
    if (!text)
      return fail(400, { ok: false, message: 'The reply is empty: write it, or discard it.' } satisfies ActionOutcome);
    return attempt(async () => {
      if (text === original) await api.decideApproval(approvalId, 'approve');
      else await api.decideApproval(approvalId, 'approve_with_edits', undefined, { thread_id: params.thread, text });
      return text === original ? 'Reply approved: it is being sent.' : 'Your edited reply is being sent.';
    });
  },
};
