// Who made a call, an API key or a person signed in to the console, and what they may do. The API's authentication
// builds it (api/auth.ts); a service that acts for someone (Chat Mode's tools) checks it the way the routes do.
import type { ApiKeyRecord } from '../db/api-keys';
import type { Session, User } from '../db/accounts';
import { roleAllows, scopesAllow, type Permission, type Role } from '../db/roles';
import type { Workspace } from '../db/workspaces';

export interface Caller {
  workspace: Workspace;
  /** Set when an API key made the call. */
  key?: ApiKeyRecord;
  /** Set when a person signed in to the console made the call. */
  user?: User;
  role?: Role;
  session?: Session;
  /** Names the caller in timelines and the audit log: `API key "ci"` or an email address. */
  actor: string;
}

/** Whether the caller's key scopes or role allow `needed` (for a choice inside a route; requirePermission refuses). */
export function callerMay(caller: Pick<Caller, 'key' | 'role'>, needed: Permission): boolean {
  if (caller.key) return scopesAllow(caller.key.scopes, needed);
  return caller.role !== undefined && roleAllows(caller.role, needed);
}
