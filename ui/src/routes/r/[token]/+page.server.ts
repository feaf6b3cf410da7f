// Run Mode: the public page of one agent. Anyone with the link starts a run and follows it; nothing else of
// the workspace is shown or reachable from here.
import { fail, isHttpError, redirect } from '@sveltejs/kit';
import { runModeApi } from '$lib/server/run-mode-api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => ({ link: await runModeApi.link(params.token) });

export const actions: Actions = {
  default: async ({ params, request, getClientAddress }) => {
    const raw = (await request.formData()).get('input');
    const input = typeof raw === 'string' ? raw.replace(/\r\n/g, '\n') : '';
    let runId = '';
    try {
      runId = (await runModeApi.start(params.token, input, getClientAddress())).id;
    } catch (e) {
      if (isHttpError(e)) return fail(e.status, { message: e.body.message, input });
      throw e;
    }
    redirect(303, `/r/${params.token}/runs/${runId}`);
  },
};
