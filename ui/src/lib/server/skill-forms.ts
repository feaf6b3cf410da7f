// The upload form of a skill (a new skill, or a new version of one): its text typed in, or a .md/.txt file read as
// text. A refusal (413 too large, 422 empty or not text) goes back to the form with everything that was typed.
import { fail, isHttpError } from '@sveltejs/kit';
import { formText } from './actions';
import { skillsApi } from './skills-api';

/** What an upload action answers; `form` names the form it came from. */
export interface SkillOutcome {
  ok: boolean;
  message: string;
  form: 'upload';
  name?: string;
  description?: string;
  content?: string;
}

const textFile = /\.(md|markdown|txt|text)$/i;

export async function uploadSkill(request: Request, describe: (name: string, version: number) => string) {
  const form = await request.formData();
  const name = formText(form, 'name');
  const description = formText(form, 'description');
  const typed = form.get('content');
  // A browser sends a textarea's line breaks as CRLF whatever was typed or pasted: back to the text's own.
  let content = typeof typed === 'string' ? typed.replace(/\r\n/g, '\n') : '';
  const file = form.get('file');
  // The textarea is what is uploaded; a chosen file fills it in the browser, and is read here when it did not.
  if (!content.trim() && file instanceof File && file.size > 0) {
    if (!textFile.test(file.name))
      return fail(415, {
        ok: false,
        message: `“${file.name}” is not a Markdown or text file: choose a .md or .txt file, or paste the text.`,
        form: 'upload',
        name,
        description,
      } satisfies SkillOutcome);
    content = await file.text();
  }
  try {
    const skill = await skillsApi.upload({ name, content, ...(description ? { description } : {}) });
    return {
      ok: true,
      message: describe(skill.name, skill.latest_version.version),
      form: 'upload',
    } satisfies SkillOutcome;
  } catch (e) {
    if (isHttpError(e))
      return fail(e.status, {
        ok: false,
        message: e.body.message,
        form: 'upload',
        name,
        description,
        content,
      } satisfies SkillOutcome);
    throw e;
  }
}
