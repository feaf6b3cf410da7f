import { fail } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { accountCall } from '$lib/server/session';
import type { Actions } from './$types';

export const actions: Actions = {
  default: async ({ request }) => {
    const email = formText(await request.formData(), 'email');
    const answer = await accountCall('/auth/password-reset', { json: { email } });
    if (answer.status !== 202) return fail(answer.status, { email, message: answer.body?.detail ?? 'Try again.' });
    return { sent: true, detail: answer.body.detail as string };
  },
};
