import { fail, redirect } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { client } from '$lib/server/api';
import { accountFetch } from '$lib/server/session';
import type { Actions } from './$types';

export const actions: Actions = {
  default: async ({ request }) => {
    const form = await request.formData();
    const values = {
      email: formText(form, 'email'),
      name: formText(form, 'name'),
      workspace_name: formText(form, 'workspace_name'),
    };
    const answer = await client.POST('/auth/signup', {
      fetch: accountFetch,
      body: {
        email: values.email,
        password: String(form.get('password') ?? ''),
        ...(values.name ? { name: values.name } : {}),
        ...(values.workspace_name ? { workspace_name: values.workspace_name } : {}),
      },
    });
    if (!answer.data)
      return fail(answer.response.status, { ...values, message: answer.error?.detail ?? 'Sign-up failed.' });
    redirect(303, '/agents');
  },
};
