import { fail, redirect } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { accountCall, safeNext } from '$lib/server/session';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ cookies, url }) => {
  if (cookies.get('cadre_session') && (await accountCall('/me')).status === 200) {
    redirect(303, safeNext(url.searchParams.get('next')));
  }
  return { next: url.searchParams.get('next') ?? '', ssoError: url.searchParams.get('sso_error') };
};

export const actions: Actions = {
  // Single sign-on: the email's domain names the workspace's provider; the browser goes there and comes back.
  sso: async ({ request, url }) => {
    const form = await request.formData();
    const email = formText(form, 'email');
    const found = await accountCall(`/auth/sso/discover?email=${encodeURIComponent(email)}`);
    if (found.status !== 200) {
      return fail(found.status, {
        ssoEmail: email,
        ssoMessage: found.body?.detail ?? 'Single sign-on is not available.',
      });
    }
    const next = safeNext(formText(form, 'next') || url.searchParams.get('next'));
    redirect(303, `${found.body.start_url}?next=${encodeURIComponent(next)}`);
  },

  password: async ({ request, url }) => {
    const form = await request.formData();
    const email = formText(form, 'email');
    const code = formText(form, 'code');
    const answer = await accountCall('/auth/login', {
      json: {
        email,
        password: String(form.get('password') ?? ''),
        // A six-digit code is from the authenticator app; anything else is a recovery code.
        ...(code ? (/^\d{6}$/.test(code) ? { totp_code: code } : { recovery_code: code }) : {}),
      },
    });
    if (answer.status !== 200) {
      return fail(answer.status, {
        email,
        next: formText(form, 'next'),
        message: answer.body?.detail ?? 'Sign-in failed.',
        needsCode: ['two_factor_required', 'invalid_two_factor_code'].includes(answer.body?.code),
      });
    }
    redirect(303, safeNext(formText(form, 'next') || url.searchParams.get('next')));
  },
};
