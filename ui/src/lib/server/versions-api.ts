// The console's calls for an agent's version history (DESIGN.md convention 10: through the API only).
import { body, client } from './api';

export const versionsApi = {
  list: (id: string) => body(client.GET('/agents/{id}/versions', { params: { path: { id } } })),
  get: (id: string, version: number) =>
    body(client.GET('/agents/{id}/versions/{version}', { params: { path: { id, version: String(version) } } })),
  diff: (id: string, from: number, to: number) =>
    body(client.GET('/agents/{id}/diff', { params: { path: { id }, query: { from, to } } })),
  /** Refused (409) when a version newer than `base` was saved since the page showed `base` as the newest. */
  restore: (id: string, version: number, base?: number) =>
    body(
      client.POST('/agents/{id}/versions/{version}/restore', {
        params: { path: { id, version: String(version) }, query: base ? { base_version: base } : {} },
      }),
    ),
};
