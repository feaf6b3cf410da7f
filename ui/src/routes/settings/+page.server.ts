import { fail, isHttpError, redirect } from '@sveltejs/kit';
import QRCode from 'qrcode';
import { sentence } from '$lib/format';
import { attempt, formText } from '$lib/server/actions';
import { settingsApi, type ApiKeyScope, type Role } from '$lib/server/settings-api';
import type { Actions, PageServerLoad } from './$types';

const keyScopes: ApiKeyScope[] = ['run', 'read', 'manage'];
/** How long a new key lasts, as offered in the form; '' is until revoked. */
const keyLifetimes: Record<string, number> = { '7': 7, '30': 30, '90': 90, '365': 365 };

/** The authenticator setup as the page shows it: the key, its otpauth link and that link as a QR code to scan. */
async function twoFactorSetup(secret: string, otpauthUrl: string) {
  const qr = await QRCode.toDataURL(otpauthUrl, { margin: 1, width: 192, errorCorrectionLevel: 'M' });
  return { secret, otpauth_url: otpauthUrl, qr };
}

/** A role picked in a form: checked by the API, whose refusal (422) comes back as the form's notice. */
const roleIn = (form: FormData) => formText(form, 'role') as Role;

/** A read the caller's role may not allow (invitations, the audit log): shown as why, not as an error page. */
async function allowed<T>(call: () => Promise<T>): Promise<{ data: T | null; why: string | null }> {
  try {
    return { data: await call(), why: null };
  } catch (e) {
    if (isHttpError(e) && e.status === 403) return { data: null, why: sentence(e.body.message) };
    throw e;
  }
}

export const load: PageServerLoad = async ({ parent }) => {
  const { me } = await parent();
  const [members, invitations, audit, apiKeys] = await Promise.all([
    settingsApi.members(),
    allowed(settingsApi.invitations),
    allowed(settingsApi.audit),
    allowed(settingsApi.apiKeys),
  ]);
  return { me, members: members.data, invitations, audit, apiKeys };
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
    const { secret, otpauth_url } = await settingsApi.startTwoFactor();
    return {
      ok: true,
      message: 'Scan the QR code (or type the key) in your authenticator app, then enter the code it shows.',
      setup: await twoFactorSetup(secret, otpauth_url),
    };
  },
  confirmTwoFactor: async ({ request }) => {
    const form = await request.formData();
    const code = formText(form, 'code');
    try {
      const { recovery_codes } = await settingsApi.confirmTwoFactor(code);
      return {
        ok: true,
        message: 'Two-factor authentication is on. Keep these recovery codes safe: they are shown once.',
        recovery_codes,
      };
    } catch (e) {
      // A wrong code keeps the setup open with the same key (the API still holds it as pending): try again.
      if (isHttpError(e)) {
        const [secret, url] = [formText(form, 'secret'), formText(form, 'otpauth_url')];
        const setup = secret && url.startsWith('otpauth://') ? await twoFactorSetup(secret, url) : undefined;
        return fail(e.status, { ok: false, message: sentence(e.body.message), setup });
      }
      throw e;
    }
  },
  createApiKey: async ({ request }) => {
    const form = await request.formData();
    const name = formText(form, 'name');
    const scopes = form.getAll('scopes').filter((s): s is ApiKeyScope => keyScopes.includes(s as ApiKeyScope));
    const days = keyLifetimes[formText(form, 'expires_in_days')];
    const typed = { name, scopes, expires_in_days: formText(form, 'expires_in_days') };
    if (!scopes.length) return fail(400, { ok: false, message: 'Choose at least one scope for the key.', typed });
    try {
      const expiresAt = days ? new Date(Date.now() + days * 86_400_000).toISOString() : undefined;
      const created = await settingsApi.createApiKey(name, scopes, expiresAt);
      return {
        ok: true,
        message: `API key “${created.name}” created. Copy it now: it is shown once.`,
        newKey: { name: created.name, key: created.key ?? '' },
      };
    } catch (e) {
      if (isHttpError(e)) return fail(e.status, { ok: false, message: sentence(e.body.message), typed });
      throw e;
    }
  },
  revokeApiKey: async ({ request }) => {
    const form = await request.formData();
    return attempt(async () => {
      await settingsApi.revokeApiKey(formText(form, 'id'));
      return `API key “${formText(form, 'name')}” revoked: it stops working at once.`;
    }, sentence);
  },
  disableTwoFactor: async ({ request }) => {
    const password = String((await request.formData()).get('password') ?? '');
    return attempt(async () => {
      await settingsApi.disableTwoFactor(password);
      return 'Two-factor authentication is off.';
    }, sentence);
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
      if (isHttpError(e)) return fail(e.status, { ok: false, message: sentence(e.body.message) });
      throw e;
    }
  },
  revokeInvitation: async ({ request }) => {
    const id = formText(await request.formData(), 'id');
    return attempt(async () => {
      await settingsApi.revokeInvitation(id);
      return 'Invitation withdrawn.';
    }, sentence);
  },
  changeRole: async ({ request }) => {
    const form = await request.formData();
    return attempt(async () => {
      const member = await settingsApi.changeRole(formText(form, 'user_id'), roleIn(form));
      return `Role changed: ${member.email} is now ${member.role}.`;
    }, sentence);
  },
  removeMember: async ({ request }) => {
    const form = await request.formData();
    return attempt(async () => {
      await settingsApi.removeMember(formText(form, 'user_id'));
      return `Removed ${formText(form, 'email')} from the workspace.`;
    }, sentence);
  },
  switchWorkspace: async ({ request }) => {
    await settingsApi.switchWorkspace(formText(await request.formData(), 'workspace_id'));
    redirect(303, '/dashboard');
  },
};
