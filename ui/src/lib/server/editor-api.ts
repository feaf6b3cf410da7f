// The editor's calls: the tool catalogue and saving a new version of an agent (DESIGN.md convention 10).
import { body, client, type AgentSpecBody } from './api';

export const editorApi = {
  tools: async () => (await body(client.GET('/tools'))).data,
  save: (id: string, spec: AgentSpecBody) => body(client.PUT('/agents/{id}', { params: { path: { id } }, body: spec })),
};
