// The console's calls for an agent's version history (DESIGN.md convention 10: through the API only).
import { body, client } from './api';

export const versionsApi = {
  list: (id: string) => body(client.GET('/agents/{id}/versions', { params: { path: { id } } })),
  get: (id: string, version: number) =>
    body(client.GET('/agents/{id}/versions/{version}', { params: { path: { id, version: String(version) } } })),
  diff: (id: string, from: number, to: number) =>
    body(client.GET('/agents/{id}/diff', { params: { path: { id }, query: { from, to } } })),
  restore: (id: string, version: number) =>
    body(
      client.POST('/agents/{id}/versions/{version}/restore', {
        params: { path: { id, version: String(version) } },
      }),
    ),
};
