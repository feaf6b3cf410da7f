// Creating agents from the console: new, imported from JSON, duplicated, exported (DESIGN.md convention 10).
import { allPages, api, body, cleanQuery, client, done, download, type AgentSpecBody } from './api';

export const agentsApi = {
  stateStore: async (id: string) =>
    (
      await allPages((cursor) =>
        body(
          client.GET('/agents/{id}/state-store', {
            params: { path: { id }, query: cleanQuery({ limit: 500, cursor }) },
          }),
        ),
      )
    ).data,
  deleteState: (id: string, key: string) =>
    done(client.DELETE('/agents/{id}/state-store/{key}', { params: { path: { id, key } } })),
  runLinks: async (id: string) => (await body(client.GET('/agents/{id}/run-links', { params: { path: { id } } }))).data,
  createRunLink: (id: string) => body(client.POST('/agents/{id}/run-links', { params: { path: { id } }, body: {} })),
  revokeRunLink: (id: string) => done(client.DELETE('/run-links/{id}', { params: { path: { id } } })),
  /** Whether the workspace already has an agent of this name (letter case aside), to warn before making another. */
  named: async (name: string) => {
    const wanted = name.toLocaleLowerCase();
    const agents = await allPages((cursor) => api.listAgents({ limit: 100, cursor }));
    return agents.data.some((a) => a.name.toLocaleLowerCase() === wanted);
  },
  create: (spec: AgentSpecBody) => body(client.POST('/agents', { body: spec })),
  import: (spec: AgentSpecBody) => body(client.POST('/agents/import', { body: spec })),
  duplicate: (id: string) => body(client.POST('/agents/{id}/duplicate', { params: { path: { id } } })),
  /** The spec as a file: streamed through with the name the API gives it. */
  export: (id: string) => download(client.GET('/agents/{id}/export', { params: { path: { id } }, parseAs: 'stream' })),
};
