import { fail } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { client } from '$lib/server/api';
import { accountFetch } from '$lib/server/session';
import type { Actions } from './$types';

export const actions: Actions = {
  default: async ({ request }) => {
    const email = formText(await request.formData(), 'email');
    const answer = await client.POST('/auth/password-reset', { body: { email }, fetch: accountFetch });
    if (!answer.data) return fail(answer.response.status, { email, message: answer.error?.detail ?? 'Try again.' });
    return { sent: true, detail: answer.data.detail };
  },
};
