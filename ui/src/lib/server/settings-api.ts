// The console's calls for the settings page: the person's account, the workspace's members, invitations, API keys
// and audit log (DESIGN.md convention 10: through the API like every other read).
import type { Schemas } from '$api/client';
import { allPages, body, cleanQuery, client, done } from './api';

export type Role = Schemas['Member']['role'];
export type ApiKey = Schemas['ApiKey'];
export type ApiKeyScope = ApiKey['scopes'][number];

export const settingsApi = {
  members: () =>
    allPages((cursor) => body(client.GET('/members', { params: { query: cleanQuery({ limit: 500, cursor }) } }))),
  changeRole: (userId: string, role: Role) =>
    body(client.PATCH('/members/{userId}', { params: { path: { userId } }, body: { role } })),
  removeMember: (userId: string) => done(client.DELETE('/members/{userId}', { params: { path: { userId } } })),
  invitations: () => body(client.GET('/invitations')),
  invite: (role: Role, email?: string) =>
    body(client.POST('/invitations', { body: { role, ...(email ? { email } : {}) } })),
  revokeInvitation: (id: string) => done(client.DELETE('/invitations/{id}', { params: { path: { id } } })),
  audit: () => body(client.GET('/audit-log')),
  apiKeys: () =>
    allPages((cursor) => body(client.GET('/api-keys', { params: { query: cleanQuery({ limit: 200, cursor }) } }))),
  createApiKey: (name: string, scopes: ApiKeyScope[], expiresAt?: string) =>
    body(client.POST('/api-keys', { body: { name, scopes, ...(expiresAt ? { expires_at: expiresAt } : {}) } })),
  revokeApiKey: (id: string) => done(client.DELETE('/api-keys/{id}', { params: { path: { id } } })),
  changePassword: (current: string, next: string) =>
    done(client.POST('/me/password', { body: { current_password: current, new_password: next } })),
  logoutEverywhere: () => done(client.POST('/auth/logout-everywhere')),
  startTwoFactor: () => body(client.POST('/me/two-factor')),
  confirmTwoFactor: (code: string) => body(client.POST('/me/two-factor/confirm', { body: { code } })),
  disableTwoFactor: (password: string) => done(client.DELETE('/me/two-factor', { body: { password } })),
  switchWorkspace: (id: string) => done(client.PUT('/me/workspace', { body: { workspace_id: id } })),
};
