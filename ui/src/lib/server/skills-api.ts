// Skills as the console reads and uploads them (DESIGN.md convention 10).
import type { paths, Schemas } from '$api/client';
import { allPages, body, cleanQuery, client, done } from './api';

export type Skill = Schemas['Skill'];
export type SkillUpload = paths['/skills']['post']['requestBody']['content']['application/json'];
export type PlatformSkill =
  paths['/skills']['get']['responses'][200]['content']['application/json']['platform'][number];
export type ItemSkillContext =
  paths['/runs/{id}/skill-context']['get']['responses'][200]['content']['application/json'];

export const skillsApi = {
  list: () =>
    allPages((cursor) => body(client.GET('/skills', { params: { query: cleanQuery({ limit: 500, cursor }) } }))),
  get: (id: string) => body(client.GET('/skills/{id}', { params: { path: { id } } })),
  version: (id: string, version: number) =>
    body(client.GET('/skills/{id}/versions/{version}', { params: { path: { id, version: String(version) } } })),
  upload: (skill: SkillUpload) => body(client.POST('/skills', { body: skill })),
  archive: (id: string) => done(client.DELETE('/skills/{id}', { params: { path: { id } } })),
  skillContext: (runId: string, item: number) =>
    body(client.GET('/runs/{id}/skill-context', { params: { path: { id: runId }, query: { item } } })),
};
