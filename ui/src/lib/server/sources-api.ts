// Sources and citations as the console reads them through the API (DESIGN.md convention 10).
import type { paths } from '$api/client';
import { allPages, apiFetch, body, cleanQuery, client, download } from './api';

type Added = paths['/sources']['post']['responses'][202]['content']['application/json'];

export const sourcesApi = {
  list: () =>
    allPages((cursor) => body(client.GET('/sources', { params: { query: cleanQuery({ limit: 500, cursor }) } }))),
  get: (id: string) => body(client.GET('/sources/{id}', { params: { path: { id } } })),
  /**
   * Files as the API takes them: multipart, one source per file unless a name groups them into one. Raw, as the
   * typed client sends only JSON bodies (its paths type the route's JSON form, not this one); the answer is typed.
   */
  upload: async (files: File[], name?: string): Promise<Added> => {
    const form = new FormData();
    if (name) form.append('name', name);
    for (const f of files) form.append('files', f, f.name);
    return (await apiFetch('/v1/sources', { method: 'POST', body: form })).json();
  },
  addUrl: (url: string, name?: string) => body(client.POST('/sources', { body: name ? { url, name } : { url } })),
  versionPassages: (id: string, version: number, cursor: string | null) =>
    body(
      client.GET('/sources/{id}/versions/{version}/passages', {
        params: { path: { id, version: String(version) }, query: cleanQuery({ limit: 100, cursor }) },
      }),
    ),
  citation: (id: string) => body(client.GET('/passages/{id}', { params: { path: { id } } })),
  /** The raw picture, for the console's proxy route (the browser cannot hold the API key). */
  pageImage: (id: string) =>
    download(
      client.GET('/passages/{id}/page-image', {
        params: { path: { id } },
        headers: { accept: 'image/*' },
        parseAs: 'stream',
      }),
    ),
  sourceContext: (id: string, item: number) =>
    body(client.GET('/runs/{id}/source-context', { params: { path: { id }, query: { item } } })),
};
