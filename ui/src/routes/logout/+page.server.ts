import { redirect } from '@sveltejs/kit';
import { accountCall } from '$lib/server/session';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = () => redirect(303, '/login');

export const actions: Actions = {
  default: async ({ cookies }) => {
    if (cookies.get('cadre_session')) await accountCall('/auth/logout', { method: 'POST' });
    cookies.delete('cadre_session', { path: '/' });
    cookies.delete('cadre_csrf', { path: '/' });
    redirect(303, '/login');
  },
};
