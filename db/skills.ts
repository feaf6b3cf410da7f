// Skills of a workspace and their versions (db/migrations/017_skills.ts), and the skills each item's model step
// loaded (run details).
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { SkillRef, SkillUsed } from '../model/skill';
import { cursorPage, decodeTextCursor, isUuid } from './runs';

export interface SkillRow {
  id: string;
  workspace_id: string;
  name: string;
  latest_version: number;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  archived_at: Date | null;
}

export interface SkillVersionRow {
  id: string;
  skill_id: string;
  version: number;
  description: string;
  size: number;
  sha256: string;
  created_by: string;
  created_at: Date;
}

export type SkillVersionWithContent = SkillVersionRow & { content: string };

const versionColumns = ['id', 'skill_id', 'version', 'description', 'size', 'sha256', 'created_by', 'created_at'];

/**
 * Adds a version to the skill called `name`, creating the skill if there is none (and bringing back an archived
 * one): version 1 of a new skill, or the next version, which runs started from now on use.
 */
export async function addSkillVersion(
  knex: Knex,
  workspaceId: string,
  input: { name: string; description: string; content: string; createdBy: string },
): Promise<{ skill: SkillRow; version: SkillVersionRow }> {
  return knex.transaction(async (trx) => {
    // Two uploads of the same new name at once: the unique key makes one wait, then both add a version.
    await trx.raw(
      `insert into skills (id, workspace_id, name, created_by) values (?, ?, ?, ?)
       on conflict (workspace_id, name) do nothing`,
      [randomUUID(), workspaceId, input.name, input.createdBy],
    );
    const [skill] = await trx('skills')
      .where({ workspace_id: workspaceId, name: input.name })
      .update({ latest_version: trx.raw('latest_version + 1'), updated_at: trx.fn.now(), archived_at: null })
      .returning('*');
    const [version] = await trx('skill_versions')
      .insert({
        id: randomUUID(),
        skill_id: skill.id,
        version: skill.latest_version,
        description: input.description,
        content: input.content,
        size: Buffer.byteLength(input.content, 'utf8'),
        sha256: createHash('sha256').update(input.content, 'utf8').digest('hex'),
        created_by: input.createdBy,
      })
      .returning(versionColumns);
    return { skill, version };
  });
}

export async function getSkill(knex: Knex, workspaceId: string, id: string): Promise<SkillRow | undefined> {
  if (!isUuid(id)) return undefined;
  return knex('skills').where({ id, workspace_id: workspaceId }).first();
}

/** A page of the workspace's skills that are not archived, by name; the cursor is the last one's name and id. */
export async function listSkills(knex: Knex, workspaceId: string, page: { limit: number; cursor?: string }) {
  const q = knex('skills').where({ workspace_id: workspaceId }).whereNull('archived_at');
  if (page.cursor) q.whereRaw('(name, id) > (?, ?::uuid)', decodeTextCursor(page.cursor));
  const rows: SkillRow[] = await q.orderBy([{ column: 'name' }, { column: 'id' }]).limit(page.limit + 1);
  return cursorPage(rows, page.limit, (s) => [s.name, s.id]);
}

/** The versions of these skills, newest first, without their content. */
export function listSkillVersions(knex: Knex, skillIds: string[]): Promise<SkillVersionRow[]> {
  if (skillIds.length === 0) return Promise.resolve([]);
  return knex('skill_versions')
    .whereIn('skill_id', skillIds)
    .orderBy([
      { column: 'skill_id', order: 'asc' },
      { column: 'version', order: 'desc' },
    ])
    .select(versionColumns);
}

export function getSkillVersion(
  knex: Knex,
  skillId: string,
  version: number,
): Promise<SkillVersionWithContent | undefined> {
  return knex('skill_versions').where({ skill_id: skillId, version }).first();
}

/** Archives a skill: runs already started keep it, later ones and new agents do not find it. */
export async function archiveSkill(knex: Knex, workspaceId: string, id: string): Promise<boolean> {
  return (
    (await knex('skills')
      .where({ id, workspace_id: workspaceId })
      .whereNull('archived_at')
      .update({ archived_at: knex.fn.now(), updated_at: knex.fn.now() })) > 0
  );
}

/** Names of the workspace's agents whose current version lists each skill (by name, pinned or not). */
export async function agentsUsingSkills(knex: Knex, workspaceId: string): Promise<Map<string, string[]>> {
  const rows: { name: string; skill: string }[] = (
    await knex.raw(
      `select a.name, regexp_replace(s.skill, '@[0-9]+$', '') as skill
         from agents a
         join agent_versions v on v.agent_id = a.id and v.version = a.current_version
         cross join lateral jsonb_array_elements_text(coalesce(v.spec->'skills', '[]'::jsonb)) as s(skill)
        where a.workspace_id = ?
        order by a.name`,
      [workspaceId],
    )
  ).rows;
  const out = new Map<string, string[]>();
  for (const r of rows)
    if (!out.get(r.skill)?.includes(r.name)) out.set(r.skill, [...(out.get(r.skill) ?? []), r.name]);
  return out;
}

/** What is wrong with each of these references now: no such skill, or no such version ([] when all resolve). */
export async function unresolvedSkills(knex: Knex, workspaceId: string, refs: SkillRef[]): Promise<string[]> {
  const resolved = await resolveSkills(knex, workspaceId, refs, knex.raw('now()'));
  return resolved.flatMap((r) => (r.problem ? [r.problem] : []));
}

export type ResolvedSkill = { ref: SkillRef } & (
  { problem: string; version?: undefined } | { problem?: undefined; version: SkillVersionWithContent }
);

/** A run's start, compared in the database (a JS Date would drop the microseconds). */
export const runStart = (knex: Knex, runId: string) => knex.raw('(select created_at from runs where id = ?)', [runId]);

/**
 * The version of each referenced skill in force at `asOf` (a run's start): the pinned one, or the newest created
 * by then. A skill archived by then, or created later, is missing; a version uploaded later is not seen.
 */
export async function resolveSkills(
  knex: Knex,
  workspaceId: string,
  refs: SkillRef[],
  asOf: Date | Knex.Raw,
): Promise<ResolvedSkill[]> {
  if (refs.length === 0) return [];
  const names = [...new Set(refs.map((r) => r.name))];
  const skills: SkillRow[] = await knex('skills')
    .where({ workspace_id: workspaceId })
    .whereIn('name', names)
    .andWhere('created_at', '<=', asOf)
    .andWhere((q) => q.whereNull('archived_at').orWhere('archived_at', '>', asOf));
  const versions: SkillVersionWithContent[] = skills.length
    ? await knex('skill_versions')
        .whereIn(
          'skill_id',
          skills.map((s) => s.id),
        )
        .andWhere('created_at', '<=', asOf)
        .orderBy('version', 'desc')
    : [];
  return refs.map((ref) => {
    const skill = skills.find((s) => s.name === ref.name);
    const own = skill ? versions.filter((v) => v.skill_id === skill.id) : [];
    if (own.length === 0) return { ref, problem: `there is no skill "${ref.name}" in this workspace` };
    if (ref.version === undefined) return { ref, version: own[0] };
    const pinned = own.find((v) => v.version === ref.version);
    if (!pinned)
      return { ref, problem: `skill "${ref.name}" has no version ${ref.version} (its newest is ${own[0].version})` };
    return { ref, version: pinned };
  });
}

/** Records what an item's model step had in its context (the last attempt's, if the step ran again). */
export async function recordSkillContext(
  knex: Knex,
  row: { runId: string; itemSeq: number; nodeId: string; skills: SkillUsed[] },
): Promise<void> {
  await knex('run_skill_context')
    .insert({ run_id: row.runId, item_seq: row.itemSeq, node_id: row.nodeId, skills: JSON.stringify(row.skills) })
    .onConflict(['run_id', 'item_seq', 'node_id'])
    .merge();
}

export function listSkillContext(
  knex: Knex,
  runId: string,
  itemSeq?: number,
): Promise<{ item_seq: number; node_id: string; skills: SkillUsed[]; at: Date }[]> {
  const q = knex('run_skill_context').where({ run_id: runId }).orderBy(['item_seq', 'at', 'node_id']);
  if (itemSeq !== undefined) q.andWhere({ item_seq: itemSeq });
  return q.select('item_seq', 'node_id', 'skills', 'at');
}
