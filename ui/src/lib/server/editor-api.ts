// The editor's calls: the tool catalogue and saving a new version of an agent (DESIGN.md convention 10).
import { body, client, type AgentSpecBody } from './api';

export const editorApi = {
  tools: async () => (await body(client.GET('/tools'))).data,
  /** Saves a new version, refused (409) if one newer than `baseVersion`, the version the edit started from, was saved. */
  save: (id: string, spec: AgentSpecBody, baseVersion?: number) =>
    body(client.PUT('/agents/{id}', { params: { path: { id }, query: { base_version: baseVersion } }, body: spec })),
};
