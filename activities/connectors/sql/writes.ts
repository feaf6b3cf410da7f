// The SQL tools that change rows act only through a connection that allows writes. A call of one on a read-only
// connection is refused before anything else happens: a tool node's item fails as the walk reaches it (no reviewer
// is asked to approve a write that cannot happen), a model step is not offered the tool for such a connection, and
// the handler refuses it too (the connection may have changed since).
import type { Knex } from 'knex';
import { sqlKinds, type SqlConfig } from '../../../model/connection';
import type { AgentSpec } from '../../../model/agent';

export const sqlWriteTools: ReadonlySet<string> = new Set(['sql.insert', 'sql.update']);

export const readOnlyMessage = (connection: string) =>
  `connection "${connection}" is read-only: an admin can allow writes in Integrations (allow_writes)`;

/** Whether each SQL connection among `names` (of the workspace, or of the run's workspace) allows writes. */
export async function sqlConnectionWrites(
  knex: Knex,
  of: { workspaceId: string } | { runId: string },
  names: readonly string[],
): Promise<Map<string, boolean>> {
  if (names.length === 0) return new Map();
  const workspaceId =
    'workspaceId' in of
      ? of.workspaceId
      : ((await knex('runs').where({ id: of.runId }).first('workspace_id')) as { workspace_id: string } | undefined)
          ?.workspace_id;
  if (!workspaceId) return new Map();
  const rows: { name: string; config: SqlConfig }[] = await knex('connections')
    .where({ workspace_id: workspaceId })
    .whereIn('name', [...names])
    .whereIn('kind', [...sqlKinds])
    .select('name', 'config');
  return new Map(rows.map((r) => [r.name, r.config.allow_writes === true]));
}

/**
 * For a walk of the agent's items (activities/page-walk.ts): the refusal of a tool node that writes through a
 * read-only connection, said before its approval is asked. Undefined when the agent has no such node.
 */
export async function sqlWriteRefusal(
  knex: Knex,
  workspaceId: string,
  spec: Pick<AgentSpec, 'nodes' | 'connections'>,
): Promise<((tool: string, args: Record<string, unknown>) => string | undefined) | undefined> {
  if (!spec.nodes.some((n) => n.kind === 'tool' && sqlWriteTools.has(n.tool))) return undefined;
  const writes = await sqlConnectionWrites(knex, { workspaceId }, spec.connections);
  if (![...writes.values()].includes(false)) return undefined;
  return (tool, args) =>
    sqlWriteTools.has(tool) && writes.get(String(args.connection)) === false
      ? readOnlyMessage(String(args.connection))
      : undefined;
}
