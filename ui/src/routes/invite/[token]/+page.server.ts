import { error, fail, redirect } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { accountCall } from '$lib/server/session';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params, cookies }) => {
  const invitation = await accountCall(`/public/invitations/${encodeURIComponent(params.token)}`);
  if (invitation.status !== 200) error(invitation.status, invitation.body?.detail ?? 'This invitation cannot be used.');
  const me = cookies.get('cadre_session') ? await accountCall('/me') : undefined;
  return {
    invitation: invitation.body as { workspace_name: string; role: string; email: string | null },
    signedInAs: me?.status === 200 ? (me.body.user.email as string) : null,
  };
};

export const actions: Actions = {
  default: async ({ request, params }) => {
    const form = await request.formData();
    const email = formText(form, 'email');
    const json =
      email || form.has('password')
        ? { email, password: String(form.get('password') ?? ''), name: formText(form, 'name') || undefined }
        : {};
    const answer = await accountCall(`/public/invitations/${encodeURIComponent(params.token)}/accept`, { json });
    if (answer.status !== 200) return fail(answer.status, { email, message: answer.body?.detail ?? 'Could not join.' });
    redirect(303, '/agents');
  },
};
