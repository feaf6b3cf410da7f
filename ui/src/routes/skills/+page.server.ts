// Skills: the workspace's (uploaded, versioned by name) and the platform's (built in, brought in by the tools a
// model step is offered). Uploading under a name that exists adds a version to that skill.
import { uploadSkill } from '$lib/server/skill-forms';
import { skillsApi } from '$lib/server/skills-api';
import type { Actions, PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ url }) => {
  const skills = await skillsApi.list();
  return { skills: skills.data, platform: skills.platform, archived: url.searchParams.get('archived') };
};

export const actions: Actions = {
  upload: ({ request }) =>
    uploadSkill(request, (name, version) =>
      version === 1
        ? `Uploaded “${name}”. Agents use it once their “skills” list it.`
        : `“${name}” existed: uploaded as its version ${version}.`,
    ),
};
