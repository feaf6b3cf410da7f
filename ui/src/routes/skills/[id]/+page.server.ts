// A skill: its versions with their text, a new version uploaded under its name, archiving it.
import { fail, isHttpError, redirect } from '@sveltejs/kit';
import { uploadSkill } from '$lib/server/skill-forms';
import { skillsApi } from '$lib/server/skills-api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => {
  const skill = await skillsApi.get(params.id);
  const versions = await Promise.all(
    (skill.versions ?? [skill.latest_version]).map((v) => skillsApi.version(skill.id, v.version)),
  );
  return { skill, versions };
};

export const actions: Actions = {
  upload: ({ request }) => uploadSkill(request, (name, version) => `Uploaded version ${version} of “${name}”.`),

  archive: async ({ params }) => {
    const skill = await skillsApi.get(params.id);
    try {
      await skillsApi.archive(skill.id);
    } catch (e) {
      if (isHttpError(e)) return fail(e.status, { ok: false, message: e.body.message, form: 'archive' as const });
      throw e;
    }
    redirect(303, `/skills?archived=${encodeURIComponent(skill.name)}`);
  },
};
