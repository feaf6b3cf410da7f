import { fail } from '@sveltejs/kit';
import { client } from '$lib/server/api';
import { accountFetch } from '$lib/server/session';
import type { Actions } from './$types';

export const actions: Actions = {
  default: async ({ request, params }) => {
    const password = String((await request.formData()).get('password') ?? '');
    const answer = await client.POST('/auth/password-reset/confirm', {
      body: { token: params.token, password },
      fetch: accountFetch,
    });
    if (!answer.response.ok) return fail(answer.response.status, { message: answer.error?.detail ?? 'Try again.' });
    return { done: true };
  },
};
