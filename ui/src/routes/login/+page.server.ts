import { fail, redirect } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { client } from '$lib/server/api';
import { accountFetch, safeNext } from '$lib/server/session';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ cookies, url }) => {
  if (cookies.get('cadre_session') && (await client.GET('/me', { fetch: accountFetch })).data) {
    redirect(303, safeNext(url.searchParams.get('next')));
  }
  return { next: url.searchParams.get('next') ?? '', ssoError: url.searchParams.get('sso_error') };
};

export const actions: Actions = {
  // Single sign-on: the email's domain names the workspace's provider; the browser goes there and comes back.
  sso: async ({ request, url }) => {
    const form = await request.formData();
    const email = formText(form, 'email');
    const found = await client.GET('/auth/sso/discover', { params: { query: { email } }, fetch: accountFetch });
    if (!found.data) {
      return fail(found.response.status, {
        ssoEmail: email,
        ssoMessage: found.error?.detail ?? 'Single sign-on is not available.',
      });
    }
    const next = safeNext(formText(form, 'next') || url.searchParams.get('next'));
    redirect(303, `${found.data.start_url}?next=${encodeURIComponent(next)}`);
  },

  password: async ({ request, url }) => {
    const form = await request.formData();
    const email = formText(form, 'email');
    const code = formText(form, 'code');
    const answer = await client.POST('/auth/login', {
      fetch: accountFetch,
      body: {
        email,
        password: String(form.get('password') ?? ''),
        // A six-digit code is from the authenticator app; anything else is a recovery code.
        ...(code ? (/^\d{6}$/.test(code) ? { totp_code: code } : { recovery_code: code }) : {}),
      },
    });
    if (!answer.data) {
      return fail(answer.response.status, {
        email,
        next: formText(form, 'next'),
        message: answer.error?.detail ?? 'Sign-in failed.',
        needsCode: ['two_factor_required', 'invalid_two_factor_code'].includes(answer.error?.code ?? ''),
      });
    }
    redirect(303, safeNext(formText(form, 'next') || url.searchParams.get('next')));
  },
};
