import { fail, isHttpError, redirect } from '@sveltejs/kit';
import { attempt, formText } from '$lib/server/actions';
import { settingsApi, type Role } from '$lib/server/settings-api';
import type { Actions, PageServerLoad } from './$types';

/** A role picked in a form: checked by the API, whose refusal (422) comes back as the form's notice. */
const roleIn = (form: FormData) => formText(form, 'role') as Role;

/** A read the caller's role may not allow (invitations, the audit log): shown as why, not as an error page. */
async function allowed<T>(call: () => Promise<T>): Promise<{ data: T | null; why: string | null }> {
  try {
    return { data: await call(), why: null };
  } catch (e) {
    if (isHttpError(e) && e.status === 403) return { data: null, why: e.body.message };
    throw e;
  }
}

export const load: PageServerLoad = async ({ parent }) => {
  const { me } = await parent();
  const [members, invitations, audit] = await Promise.all([
    settingsApi.members(),
    allowed(settingsApi.invitations),
    allowed(settingsApi.audit),
  ]);
  return { me, members: members.data, invitations, audit };
};

export const actions: Actions = {
  changePassword: async ({ request }) => {
    const form = await request.formData();
    return attempt(async () => {
      await settingsApi.changePassword(String(form.get('current') ?? ''), String(form.get('next') ?? ''));
      return 'Password changed. Your other sessions were signed out.';
    });
  },
  logoutEverywhere: async ({ cookies }) => {
    await settingsApi.logoutEverywhere();
    cookies.delete('cadre_session', { path: '/' });
    cookies.delete('cadre_csrf', { path: '/' });
    redirect(303, '/login');
  },
  startTwoFactor: async () => {
    const setup = await settingsApi.startTwoFactor();
    return { ok: true, message: 'Add this key to your authenticator app, then enter the code it shows.', setup };
  },
  confirmTwoFactor: async ({ request }) => {
    const code = formText(await request.formData(), 'code');
    try {
      const { recovery_codes } = await settingsApi.confirmTwoFactor(code);
      return {
        ok: true,
        message: 'Two-factor authentication is on. Keep these recovery codes safe: they are shown once.',
        recovery_codes,
      };
    } catch (e) {
      if (isHttpError(e)) return fail(e.status, { ok: false, message: e.body.message });
      throw e;
    }
  },
  disableTwoFactor: async ({ request }) => {
    const password = String((await request.formData()).get('password') ?? '');
    return attempt(async () => {
      await settingsApi.disableTwoFactor(password);
      return 'Two-factor authentication is off.';
    });
  },
  invite: async ({ request }) => {
    const form = await request.formData();
    try {
      const invitation = await settingsApi.invite(roleIn(form), formText(form, 'email') || undefined);
      return {
        ok: true,
        message: invitation.emailed
          ? `Invitation emailed to ${invitation.email}.`
          : 'Invitation created: send this link (shown once).',
        inviteUrl: invitation.url,
      };
    } catch (e) {
      if (isHttpError(e)) return fail(e.status, { ok: false, message: e.body.message });
      throw e;
    }
  },
  revokeInvitation: async ({ request }) => {
    const id = formText(await request.formData(), 'id');
    return attempt(async () => {
      await settingsApi.revokeInvitation(id);
      return 'Invitation withdrawn.';
    });
  },
  changeRole: async ({ request }) => {
    const form = await request.formData();
    return attempt(async () => {
      const member = await settingsApi.changeRole(formText(form, 'user_id'), roleIn(form));
      return `${member.email} is now ${member.role}.`;
    });
  },
  removeMember: async ({ request }) => {
    const form = await request.formData();
    return attempt(async () => {
      await settingsApi.removeMember(formText(form, 'user_id'));
      return `${formText(form, 'email')} was removed from the workspace.`;
    });
  },
  switchWorkspace: async ({ request }) => {
    await settingsApi.switchWorkspace(formText(await request.formData(), 'workspace_id'));
    redirect(303, '/dashboard');
  },
};
