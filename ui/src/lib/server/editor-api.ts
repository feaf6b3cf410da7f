// The editor's calls: the tool catalogue and saving a new version of an agent (DESIGN.md convention 10).
import { apiFetch } from './api';

export interface ToolInfo {
  name: string;
  description: string;
  side_effect: 'read' | 'state' | 'external';
  approval_default: 'always' | 'never';
}

export const editorApi = {
  tools: async () => ((await (await apiFetch('/v1/tools')).json()) as { data: ToolInfo[] }).data,
  save: async (agentId: string, spec: unknown) =>
    (await (
      await apiFetch(`/v1/agents/${encodeURIComponent(agentId)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(spec),
      })
    ).json()) as { current_version: number },
};
