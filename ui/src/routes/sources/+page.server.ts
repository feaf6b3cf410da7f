import { fail } from '@sveltejs/kit';
import { attempt, formText } from '$lib/server/actions';
import { sourcesApi } from '$lib/server/sources-api';
import type { ActionOutcome } from '$lib/action-outcome';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async () => {
  const sources = await sourcesApi.list();
  return { sources: sources.data };
};

const added = (names: string[]) =>
  names.length === 1
    ? `“${names[0]}” added: it is being indexed.`
    : `${names.length} sources added (${names.join(', ')}): they are being indexed.`;

export const actions: Actions = {
  upload: async ({ request }) => {
    const form = await request.formData();
    const files = form.getAll('files').filter((f): f is File => f instanceof File && f.size > 0);
    if (files.length === 0)
      return fail(400, { ok: false, message: 'Choose one or more files to upload.' } satisfies ActionOutcome);
    const name = formText(form, 'name') || undefined;
    return attempt(async () => added((await sourcesApi.upload(files, name)).data.map((s) => s.name)));
  },

  url: async ({ request }) => {
    const form = await request.formData();
    const url = formText(form, 'url');
    if (!url) return fail(400, { ok: false, message: 'Paste the address of a page.' } satisfies ActionOutcome);
    const name = formText(form, 'name') || undefined;
    return attempt(async () => added((await sourcesApi.addUrl(url, name)).data.map((s) => s.name)));
  },
};
