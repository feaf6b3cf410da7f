// Database rows → the wire shapes of api/CONTRACT.md (a run's, which Chat Mode answers too, in services/runs/json.ts).
import type { AgentRow } from '../db/agents';

export function agentJson(agent: AgentRow, extra: Record<string, unknown> = {}) {
  return {
    id: agent.id,
    workspace_id: agent.workspace_id,
    name: agent.name,
    description: agent.description,
    state: agent.state,
    current_version: agent.current_version,
    tested_version: agent.tested_version,
    created_at: agent.created_at,
    updated_at: agent.updated_at,
    ...extra,
  };
}
