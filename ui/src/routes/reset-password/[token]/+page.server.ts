import { fail } from '@sveltejs/kit';
import { accountCall } from '$lib/server/session';
import type { Actions } from './$types';

export const actions: Actions = {
  default: async ({ request, params }) => {
    const password = String((await request.formData()).get('password') ?? '');
    const answer = await accountCall('/auth/password-reset/confirm', { json: { token: params.token, password } });
    if (answer.status !== 204) return fail(answer.status, { message: answer.body?.detail ?? 'Try again.' });
    return { done: true };
  },
};
