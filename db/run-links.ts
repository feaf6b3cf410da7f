// Run Mode links: unguessable, revocable tokens scoped to one agent. The token is shown once; only its
// SHA-256 is stored (it carries 256 random bits, so a fast hash suffices and lookups are by hash).
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { newToken, tokenHash as hashOf } from './tokens';
import { liveWorkspaceIds } from './workspaces';

export interface RunLink {
  id: string;
  workspace_id: string;
  agent_id: string;
  name: string;
  created_at: Date;
  revoked_at: Date | null;
}

const columns = ['id', 'workspace_id', 'agent_id', 'name', 'created_at', 'revoked_at'];

export async function createRunLink(
  knex: Knex,
  agent: { id: string; workspace_id: string },
  name: string,
): Promise<{ link: RunLink; token: string }> {
  const { token, hash } = newToken();
  const [link] = await knex('run_links')
    .insert({ id: randomUUID(), workspace_id: agent.workspace_id, agent_id: agent.id, name, token_hash: hash })
    .returning(columns);
  return { link, token };
}

export function listRunLinks(knex: Knex, agentId: string): Promise<RunLink[]> {
  return knex('run_links').where({ agent_id: agentId }).orderBy('created_at', 'desc').select(columns);
}

export async function revokeRunLink(knex: Knex, workspaceId: string, id: string): Promise<boolean> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return false;
  const n = await knex('run_links')
    .where({ id, workspace_id: workspaceId })
    .whereNull('revoked_at')
    .update({ revoked_at: knex.fn.now() });
  return n > 0;
}

/** The live link a token opens, if any (unknown and revoked tokens open nothing). */
export async function findRunLink(knex: Knex, token: string): Promise<RunLink | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  return knex('run_links')
    .where({ token_hash: hashOf(token) })
    .whereNull('revoked_at')
    .whereIn('workspace_id', liveWorkspaceIds(knex))
    .first(columns);
}
