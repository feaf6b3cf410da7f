// Creating agents from the console: new, imported from JSON, duplicated, exported (DESIGN.md convention 10).
import { apiFetch } from './api';

const seg = encodeURIComponent;
const post = async (path: string, body?: unknown) =>
  (await (
    await apiFetch(path, {
      method: 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  ).json()) as { id: string; name: string };

export interface RunLinkInfo {
  id: string;
  name: string;
  active: boolean;
  created_at: string;
  revoked_at: string | null;
  url?: string;
  warning?: string;
}

export interface StateEntry {
  key: string;
  value: unknown;
  version: number;
  updated_at: string;
}

export const agentsApi = {
  stateStore: async (id: string) =>
    ((await (await apiFetch(`/v1/agents/${seg(id)}/state-store`)).json()) as { data: StateEntry[] }).data,
  deleteState: (id: string, key: string) =>
    apiFetch(`/v1/agents/${seg(id)}/state-store/${seg(key)}`, { method: 'DELETE' }),
  runLinks: async (id: string) =>
    ((await (await apiFetch(`/v1/agents/${seg(id)}/run-links`)).json()) as { data: RunLinkInfo[] }).data,
  createRunLink: (id: string) => post(`/v1/agents/${seg(id)}/run-links`, {}) as Promise<RunLinkInfo & { id: string }>,
  revokeRunLink: (linkId: string) => apiFetch(`/v1/run-links/${seg(linkId)}`, { method: 'DELETE' }),
  create: (spec: unknown) => post('/v1/agents', spec),
  import: (spec: unknown) => post('/v1/agents/import', spec),
  duplicate: (id: string) => post(`/v1/agents/${seg(id)}/duplicate`),
  export: (id: string) => apiFetch(`/v1/agents/${seg(id)}/export`),
};
