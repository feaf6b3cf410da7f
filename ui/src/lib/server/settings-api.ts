// The console's calls for the settings page: the person's account, the workspace's members, invitations and
// audit log (DESIGN.md convention 10: through the API like every other read).
import { callJson } from './api';

export interface Member {
  user_id: string;
  email: string;
  name: string;
  role: string;
  two_factor: boolean;
  joined_at: string;
}
export interface Invitation {
  id: string;
  role: string;
  email: string | null;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  revoked_at: string | null;
  url?: string;
  emailed?: boolean;
}
export interface AuditEvent {
  id: number;
  at: string;
  actor: string;
  action: string;
  target: string | null;
  details: Record<string, unknown>;
  ip: string | null;
}

const seg = encodeURIComponent;

export const settingsApi = {
  members: () => callJson<{ data: Member[] }>('/v1/members'),
  changeRole: (userId: string, role: string) => callJson<Member>(`/v1/members/${seg(userId)}`, 'PATCH', { role }),
  removeMember: (userId: string) => callJson<void>(`/v1/members/${seg(userId)}`, 'DELETE'),
  invitations: () => callJson<{ data: Invitation[] }>('/v1/invitations'),
  invite: (role: string, email?: string) =>
    callJson<Invitation>('/v1/invitations', 'POST', { role, ...(email ? { email } : {}) }),
  revokeInvitation: (id: string) => callJson<void>(`/v1/invitations/${seg(id)}`, 'DELETE'),
  audit: () => callJson<{ data: AuditEvent[] }>('/v1/audit-log', 'GET'),
  changePassword: (current: string, next: string) =>
    callJson<void>('/v1/me/password', 'POST', { current_password: current, new_password: next }),
  logoutEverywhere: () => callJson<void>('/v1/auth/logout-everywhere', 'POST'),
  startTwoFactor: () => callJson<{ secret: string; otpauth_url: string }>('/v1/me/two-factor', 'POST'),
  confirmTwoFactor: (code: string) =>
    callJson<{ recovery_codes: string[] }>('/v1/me/two-factor/confirm', 'POST', { code }),
  disableTwoFactor: (password: string) => callJson<void>('/v1/me/two-factor', 'DELETE', { password }),
  switchWorkspace: (id: string) => callJson<unknown>('/v1/me/workspace', 'PUT', { workspace_id: id }),
};
