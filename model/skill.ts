// Skills: reusable instructions an agent's model steps get in their context. User skills are uploaded to a
// workspace (Markdown or text, versioned by name); platform skills are built in (model/platform-skills.ts).
// Pure, so the API, the activities and the agent model share the rules.
import { z } from 'zod';

/** The most a skill version may hold, in UTF-8 bytes: a skill is guidance, not reference material (that is a source). */
export const maxSkillBytes = 100_000;

export const skillName = z
  .string()
  .trim()
  .min(1, 'a skill name cannot be empty')
  .max(100, 'a skill name has at most 100 characters')
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9 ._-]*$/,
    'a skill name is letters, digits, spaces, ".", "_" or "-", starting with a letter or digit',
  );

/**
 * How an agent names a skill in its spec: `name` (the newest version when the run starts) or `name@3`
 * (version 3, pinned).
 */
export const skillRef = z
  .string()
  .trim()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}(@[1-9]\d{0,8})?$/,
    'a skill is named as "name" (its newest version) or "name@<version>" (that version)',
  );

export interface SkillRef {
  name: string;
  /** A pinned version; none means the newest when the run started. */
  version?: number;
}

export function parseSkillRef(ref: string): SkillRef {
  const at = ref.lastIndexOf('@');
  if (at < 0) return { name: ref.trim() };
  return { name: ref.slice(0, at).trim(), version: Number(ref.slice(at + 1)) };
}

/** A skill as loaded into a model step's context: what run details list as context used. */
export interface SkillUsed {
  name: string;
  kind: 'user' | 'platform';
  /** The user skill's version (platform skills have none: they change with Cadre's releases). */
  version: number | null;
}
