import { fail, isHttpError, redirect } from '@sveltejs/kit';
import { formText } from '$lib/server/actions';
import { agentsApi } from '$lib/server/agents-api';
import { api, type AgentSpecBody } from '$lib/server/api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ url }) => {
  const agents = await api.listAgents({ limit: 100, cursor: url.searchParams.get('cursor') });
  return { agents: agents.data, nextCursor: agents.next_cursor };
};

/** A new agent starts as the smallest workflow that runs: its input, collected into a CSV file. */
const starter = (name: string, description: string): AgentSpecBody => ({
  name,
  description,
  instructions: '',
  nodes: [
    { kind: 'input', id: 'input', format: 'auto', next: 'output' },
    { kind: 'output', id: 'output', format: 'csv', file_name: 'results.csv' },
  ],
});

/** Calls the API; a refusal comes back to the form as its message, with what was typed. */
async function creating<F extends object>(call: () => Promise<{ id: string }>, then: (id: string) => string, form: F) {
  let id = '';
  try {
    id = (await call()).id;
  } catch (e) {
    if (isHttpError(e)) return fail(e.status, { ok: false, message: e.body.message, ...form });
    throw e;
  }
  redirect(303, then(id));
}

export const actions: Actions = {
  create: async ({ request }) => {
    const form = await request.formData();
    const name = formText(form, 'name');
    const description = formText(form, 'description');
    if (!name) return fail(400, { ok: false, message: 'Give the agent a name.', name, description });
    // Two agents with one name are easy to mix up in runs, approvals and notifications: ask once before making one.
    if (!form.has('same_name_ok') && (await agentsApi.named(name))) {
      return fail(409, {
        ok: false,
        message: `An agent named “${name}” already exists. Give this one another name, or create it anyway.`,
        name,
        description,
        sameName: true,
      });
    }
    return creating(
      () => agentsApi.create(starter(name, description)),
      (id) => `/agents/${id}/edit`,
      { name, description },
    );
  },

  import: async ({ request }) => {
    const form = await request.formData();
    const file = form.get('file');
    const text = file instanceof File && file.size > 0 ? await file.text() : formText(form, 'json');
    let spec: AgentSpecBody;
    try {
      // Whatever the file holds: the API checks it and names each problem (422), shown on the form.
      spec = JSON.parse(text) as AgentSpecBody;
    } catch {
      return fail(400, {
        ok: false,
        message: 'That is not JSON: choose a file exported from Cadre, or paste its text.',
        json: text,
      });
    }
    // The same question as a new agent's: an import named as an existing agent is made only once confirmed.
    const name = typeof spec?.name === 'string' ? spec.name : '';
    if (name && !form.has('same_name_ok') && (await agentsApi.named(name))) {
      return fail(409, {
        ok: false,
        message: `An agent named “${name}” already exists. Rename it in the JSON, or import it anyway.`,
        json: text,
        importSameName: true,
      });
    }
    return creating(
      () => agentsApi.import(spec),
      (id) => `/agents/${id}`,
      { json: text },
    );
  },

  duplicate: async ({ request }) => {
    const id = formText(await request.formData(), 'agent_id');
    return creating(
      () => agentsApi.duplicate(id),
      (copy) => `/agents/${copy}`,
      {},
    );
  },
};
