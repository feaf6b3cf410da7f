import { redirect } from '@sveltejs/kit';
import { client } from '$lib/server/api';
import { accountFetch } from '$lib/server/session';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = () => redirect(303, '/login');

export const actions: Actions = {
  default: async ({ cookies }) => {
    if (cookies.get('cadre_session')) await client.POST('/auth/logout', { fetch: accountFetch });
    cookies.delete('cadre_session', { path: '/' });
    cookies.delete('cadre_csrf', { path: '/' });
    redirect(303, '/login');
  },
};
