import { error, fail, redirect } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { client } from '$lib/server/api';
import { accountFetch } from '$lib/server/session';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params, cookies }) => {
  const path = { token: params.token };
  const invitation = await client.GET('/public/invitations/{token}', { params: { path }, fetch: accountFetch });
  if (!invitation.data)
    error(invitation.response.status, invitation.error?.detail ?? 'This invitation cannot be used.');
  const me = cookies.get('cadre_session') ? await client.GET('/me', { fetch: accountFetch }) : undefined;
  return { invitation: invitation.data, signedInAs: me?.data?.user.email ?? null };
};

export const actions: Actions = {
  default: async ({ request, params }) => {
    const form = await request.formData();
    const email = formText(form, 'email');
    // Signed in, an empty body joins as that person; otherwise with an email and password.
    const body =
      email || form.has('password')
        ? { email, password: String(form.get('password') ?? ''), name: formText(form, 'name') || undefined }
        : {};
    const answer = await client.POST('/public/invitations/{token}/accept', {
      params: { path: { token: params.token } },
      body,
      fetch: accountFetch,
    });
    if (!answer.data)
      return fail(answer.response.status, {
        email,
        name: formText(form, 'name'),
        message: answer.error?.detail ?? 'Could not join.',
      });
    redirect(303, '/agents');
  },
};
