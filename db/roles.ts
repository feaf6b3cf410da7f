// What each role of a workspace may do. Roles are ranked: each includes everything below it, so an editor can
// also run agents and decide approvals, and an admin can also change agents.
import type { Scope } from './api-keys';

export const roles = ['viewer', 'operator', 'editor', 'admin', 'owner'] as const;
export type Role = (typeof roles)[number];

/**
 * What a route needs. `read`, `run` and `manage` are also API key scopes; `admin` (members, invitations, API
 * keys, audit log) and `owner` (the plan, the workspace itself) belong to people.
 */
export type Permission = Scope | 'admin' | 'owner';

const lowestRole: Record<Permission, Role> = {
  read: 'viewer',
  run: 'operator', // start runs, decide approvals
  manage: 'editor', // change agents, triggers, sources
  admin: 'admin',
  owner: 'owner',
};

export const roleRank = (role: Role) => roles.indexOf(role);

export function roleAllows(role: Role, needed: Permission): boolean {
  return roleRank(role) >= roleRank(lowestRole[needed]);
}

export const permissions = Object.keys(lowestRole) as Permission[];

/** Everything a role may do: what the API tells the console, which shows only the controls a person can use. */
export const permissionsOf = (role: Role): Permission[] => permissions.filter((p) => roleAllows(role, p));

/** API keys keep their scopes: manage implies read, and a manage key also administers the keys themselves. */
export function scopesAllow(scopes: readonly Scope[], needed: Permission): boolean {
  if (needed === 'owner') return false;
  if (needed === 'admin') return scopes.includes('manage');
  return scopes.includes(needed) || (needed === 'read' && scopes.includes('manage'));
}
