// A form trigger's public page: anyone with the link fills it in, and each submission starts a run of the
// agent. Nothing else of the workspace is shown or reachable from here.
import { fail } from '@sveltejs/kit';
import { submitForm, triggersApi } from '$lib/server/triggers-api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => ({ form: await triggersApi.form(params.id) });

export const actions: Actions = {
  default: async ({ params, request, getClientAddress }) => {
    const data = await request.formData();
    const definition = await triggersApi.form(params.id);
    const values: Record<string, string | boolean> = {};
    for (const field of definition.fields) {
      const raw = data.get(field.name);
      if (field.type === 'checkbox') values[field.name] = raw === 'on';
      else if (typeof raw === 'string' && raw.trim() !== '') values[field.name] = raw;
    }
    const outcome = await submitForm(params.id, values, getClientAddress());
    if (!outcome.ok) return fail(422, { sent: false, message: outcome.message, errors: outcome.errors, values });
    return { sent: true, runId: outcome.runId, message: null, errors: {}, values: {} };
  },
};
