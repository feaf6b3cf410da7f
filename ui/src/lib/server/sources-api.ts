// Sources and citations as the console reads them through the API (DESIGN.md convention 10).
import type { Citation, ItemSourceContext, List, Source, VersionPassage } from '$lib/types';
import { apiFetch } from './api';

const seg = encodeURIComponent;
const getJson = async <T>(path: string) => (await (await apiFetch(path)).json()) as T;

export const sourcesApi = {
  list: () => getJson<List<Source>>('/v1/sources'),
  get: (id: string) => getJson<Source>(`/v1/sources/${seg(id)}`),
  /** Files as the API takes them: multipart, one source per file unless a name groups them into one. */
  upload: async (files: File[], name?: string) => {
    const form = new FormData();
    if (name) form.append('name', name);
    for (const f of files) form.append('files', f, f.name);
    return (await (await apiFetch('/v1/sources', { method: 'POST', body: form })).json()) as { data: Source[] };
  },
  addUrl: async (url: string, name?: string) =>
    (await (
      await apiFetch('/v1/sources', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(name ? { url, name } : { url }),
      })
    ).json()) as { data: Source[] },
  versionPassages: (id: string, version: number, cursor: string | null) =>
    getJson<List<VersionPassage>>(
      `/v1/sources/${seg(id)}/versions/${version}/passages?limit=100${cursor ? `&cursor=${seg(cursor)}` : ''}`,
    ),
  citation: (passageId: string) => getJson<Citation>(`/v1/passages/${seg(passageId)}`),
  /** The raw picture, for the console's proxy route (the browser cannot hold the API key). */
  pageImage: (passageId: string) =>
    apiFetch(`/v1/passages/${seg(passageId)}/page-image`, { headers: { accept: 'image/*' } }),
  sourceContext: (runId: string, itemSeq: number) =>
    getJson<ItemSourceContext>(`/v1/runs/${seg(runId)}/source-context?item=${itemSeq}`),
};
