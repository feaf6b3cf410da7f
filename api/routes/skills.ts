// Skills: reusable instructions (Markdown or text) uploaded by name, versioned (uploading under a name that exists
// adds a version), attached to agents by name and loaded into their model steps; the built-in platform skills;
// and which skills each item's model step used (run details).
import { Router } from 'express';
import { jsonSchema, nullable, obj, ref, ts, type Route } from '../openapi-schemas';
import {
  addSkillVersion,
  agentsUsingSkills,
  archiveSkill,
  getSkill,
  getSkillVersion,
  listSkillContext,
  listSkills,
  listSkillVersions,
  type SkillRow,
  type SkillVersionRow,
} from '../../db/skills';
import { getRun } from '../../db/runs';
import { platformSkills } from '../../model/platform-skills';
import { connectionKinds } from '../../model/connection';
import { maxSkillBytes } from '../../model/skill';
import { requirePermission } from '../auth';
import { ApiError } from '../problem';
import { parseQuery, queries } from '../query-params';
import { bodies } from '../request-bodies';
import { jsonBody, param, parseBody } from '../validation';
import type { RouteDeps } from './agents';

/**
 * An upload is parsed with a limit of its own, above the skill's: a skill just over its limit gets the message
 * that says so (413 skill_too_large), not the generic one about the body.
 */
const uploadLimit = '1mb';

export function skillRoutes(deps: RouteDeps): Router {
  const { knex } = deps;
  const r = Router();
  const base = `${deps.links.publicUrl}/v1`;

  const versionJson = (skillId: string, v: SkillVersionRow) => ({
    version: v.version,
    description: v.description,
    size: v.size,
    sha256: v.sha256,
    created_by: v.created_by,
    created_at: v.created_at,
    links: { content: `${base}/skills/${skillId}/versions/${v.version}` },
  });

  const skillsJson = async (workspaceId: string, skills: SkillRow[], allVersions: boolean) => {
    const versions = await listSkillVersions(
      knex,
      skills.map((s) => s.id),
    );
    const usedBy = await agentsUsingSkills(knex, workspaceId);
    return skills.map((s) => {
      const own = versions.filter((v) => v.skill_id === s.id);
      const latest = own[0]; // every skill has one: it is created with its first version
      return {
        id: s.id,
        name: s.name,
        description: latest?.description ?? '',
        latest_version: versionJson(s.id, latest),
        ...(allVersions ? { versions: own.map((v) => versionJson(s.id, v)) } : {}),
        used_by: usedBy.get(s.name) ?? [],
        created_by: s.created_by,
        created_at: s.created_at,
        updated_at: s.updated_at,
        archived_at: s.archived_at,
        links: { self: `${base}/skills/${s.id}` },
      };
    });
  };

  const loadSkill = async (workspaceId: string, id: string) => {
    const skill = await getSkill(knex, workspaceId, id);
    if (!skill) throw new ApiError(404, 'skill_not_found', `no skill ${id} in this workspace`);
    return skill;
  };

  r.get('/skills', requirePermission('read'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const page = await listSkills(knex, ws, parseQuery(queries.listSkills, req.query));
    res.json({
      data: await skillsJson(ws, page.data, false),
      platform: platformSkills.map((s) => ({
        name: s.name,
        description: s.description,
        tools: s.tools,
        connection_kinds: s.connectionKinds,
        content: s.content,
      })),
      next_cursor: page.next_cursor,
    });
  });

  r.post('/skills', requirePermission('manage'), ...jsonBody(uploadLimit), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const body = parseBody(bodies.uploadSkill, req.body);
    const size = Buffer.byteLength(body.content, 'utf8');
    if (size > maxSkillBytes)
      throw new ApiError(
        413,
        'skill_too_large',
        `the skill's content is ${size} bytes; a skill holds at most ${maxSkillBytes} bytes of instructions (reference material belongs in a source: POST /v1/sources)`,
      );
    const { skill } = await addSkillVersion(knex, ws, { ...body, createdBy: req.auth!.actor });
    const [json] = await skillsJson(ws, [skill], true);
    res.status(201).location(json.links.self).json(json);
  });

  r.get('/skills/:id', requirePermission('read'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    res.json((await skillsJson(ws, [await loadSkill(ws, param(req, 'id'))], true))[0]);
  });

  r.get('/skills/:id/versions/:version', requirePermission('read'), async (req, res) => {
    const skill = await loadSkill(req.auth!.workspace.id, param(req, 'id'));
    const given = param(req, 'version');
    const version = /^[1-9]\d{0,8}$/.test(given) ? await getSkillVersion(knex, skill.id, Number(given)) : undefined;
    if (!version)
      throw new ApiError(
        404,
        'version_not_found',
        `skill "${skill.name}" has no version ${given} (its versions are 1 to ${skill.latest_version})`,
      );
    res.json({ name: skill.name, ...versionJson(skill.id, version), content: version.content });
  });

  // Archives: its versions stay readable (runs that used them show them), runs already started keep it.
  r.delete('/skills/:id', requirePermission('manage'), async (req, res) => {
    const ws = req.auth!.workspace.id;
    const skill = await loadSkill(ws, param(req, 'id'));
    await archiveSkill(knex, ws, skill.id);
    res.status(204).end();
  });

  // Run details: the skills each item's model steps had in their context.
  r.get('/runs/:id/skill-context', requirePermission('read'), async (req, res) => {
    const { item } = parseQuery(queries.getRunSkillContext, req.query);
    const run = await getRun(knex, req.auth!.workspace.id, param(req, 'id'));
    if (!run) throw new ApiError(404, 'run_not_found', `no run ${param(req, 'id')} in this workspace`);
    const rows = await listSkillContext(knex, run.id, item);
    const seen = new Map<string, { name: string; kind: string; version: number | null; steps: number }>();
    for (const row of rows)
      for (const s of row.skills) {
        const key = `${s.kind}:${s.name}@${s.version ?? ''}`;
        const entry = seen.get(key) ?? { ...s, steps: 0 };
        entry.steps++;
        seen.set(key, entry);
      }
    res.json({ data: rows, skills: [...seen.values()], next_cursor: null });
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const skillRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/skills',
    id: 'listSkills',
    summary:
      "The workspace's skills (not archived) by name with their newest version (?limit=&cursor=), and the built-in platform skills",
    scope: 'read',
    ok: {
      200: obj({
        data: { type: 'array', items: ref('Skill') },
        platform: {
          type: 'array',
          description:
            'Built-in skills: a model step offered one of its tools gets it in its context (connection kinds for reference).',
          items: obj({
            name: { type: 'string' },
            description: { type: 'string' },
            tools: { type: 'array', items: { type: 'string' } },
            connection_kinds: { type: 'array', items: { enum: [...connectionKinds] } },
            content: { type: 'string' },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
  },
  {
    method: 'post',
    path: '/skills',
    id: 'uploadSkill',
    summary: `Upload a skill (Markdown or text, at most ${maxSkillBytes / 1000} kB); a name that exists adds a version, which runs started from then on use`,
    scope: 'manage',
    body: jsonSchema(bodies.uploadSkill),
    ok: { 201: ref('Skill') },
  },
  {
    method: 'get',
    path: '/skills/{id}',
    id: 'getSkill',
    summary: 'A skill with all its versions (archived ones too)',
    scope: 'read',
    ok: { 200: ref('Skill') },
  },
  {
    method: 'get',
    path: '/skills/{id}/versions/{version}',
    id: 'getSkillVersion',
    summary: "A version's content",
    scope: 'read',
    ok: {
      200: {
        ...obj({
          name: { type: 'string' },
          version: { type: 'integer' },
          description: { type: 'string' },
          size: { type: 'integer' },
          sha256: { type: 'string' },
          created_by: { type: 'string' },
          created_at: ts,
          links: obj({ content: { type: 'string' } }),
          content: { type: 'string' },
        }),
      },
    },
  },
  {
    method: 'delete',
    path: '/skills/{id}',
    id: 'deleteSkill',
    summary:
      'Archive a skill: runs already started keep it, later runs of agents listing it fail their model steps, saying so; uploading it again brings it back',
    scope: 'manage',
    ok: { 204: null },
  },
  {
    method: 'get',
    path: '/runs/{id}/skill-context',
    id: 'getRunSkillContext',
    summary: "The skills each item's model steps had in their context, with versions (?item=<seq>)",
    scope: 'read',
    ok: {
      200: obj({
        data: {
          type: 'array',
          items: obj({
            item_seq: { type: 'integer' },
            node_id: { type: 'string' },
            skills: { type: 'array', items: ref('SkillUsed') },
            at: ts,
          }),
        },
        skills: {
          type: 'array',
          description: 'Each skill (and version) the run used, with how many model steps loaded it.',
          items: obj({
            name: { type: 'string' },
            kind: { enum: ['user', 'platform'] },
            version: nullable({ type: 'integer' }),
            steps: { type: 'integer' },
          }),
        },
        next_cursor: nullable({ type: 'string' }),
      }),
    },
    errors: [400],
  },
];
