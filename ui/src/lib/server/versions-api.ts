// The console's calls for an agent's version history (DESIGN.md convention 10: through the API only).
import { apiFetch } from './api';

export interface VersionEntry {
  version: number;
  created_at: string;
}

export interface Change {
  path: string;
  from?: unknown;
  to?: unknown;
}

const seg = encodeURIComponent;
const json = async <T>(path: string, init: RequestInit = {}) => (await (await apiFetch(path, init)).json()) as T;

export const versionsApi = {
  list: (agentId: string) => json<{ data: VersionEntry[] }>(`/v1/agents/${seg(agentId)}/versions`),
  diff: (agentId: string, from: number, to: number) =>
    json<{ from: number; to: number; changes: Change[] }>(`/v1/agents/${seg(agentId)}/diff?from=${from}&to=${to}`),
  restore: (agentId: string, version: number) =>
    json<{ current_version: number }>(`/v1/agents/${seg(agentId)}/versions/${version}/restore`, { method: 'POST' }),
};
