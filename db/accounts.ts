// Accounts and console sessions. Passwords are hashed with argon2id (OWASP's first choice); session and CSRF
// tokens are random and stored only hashed, so a database dump lets nobody sign in.
import { randomUUID } from 'node:crypto';
import { Algorithm, hash, verify } from '@node-rs/argon2';
import type { Knex } from 'knex';
import { newToken, tokenHash } from './tokens';
import type { Role } from './roles';
import type { Workspace } from './workspaces';
import { cursorPage, decodeTimeCursor } from './runs';

export interface User {
  id: string;
  email: string;
  name: string;
  created_at: Date;
  two_factor: boolean;
}

export interface Session {
  id: string;
  user_id: string;
  workspace_id: string | null;
  created_at: Date;
  expires_at: Date;
}

/** A session lasts this long from sign-in; signing in again starts a new one. */
export const sessionDays = 14;
export const minPasswordLength = 10;

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

const userColumns = (knex: Knex) => [
  'users.id',
  'users.email',
  'users.name',
  'users.created_at',
  knex.raw('users.totp_secret is not null as two_factor'),
];

export const hashPassword = (password: string) => hash(password, { algorithm: Algorithm.Argon2id });

// Verifying against a real hash when the account is unknown takes as long as a wrong password, so response
// times do not tell which addresses have accounts.
let decoy: Promise<string> | undefined;

export async function checkPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  if (!stored) {
    await verify(await (decoy ??= hashPassword('not a password of anyone')), password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}

export async function createUser(
  knex: Knex,
  input: { email: string; password?: string; name?: string },
): Promise<User> {
  const [user] = await knex('users')
    .insert({
      id: randomUUID(),
      email: normalizeEmail(input.email),
      name: input.name ?? '',
      password_hash: input.password ? await hashPassword(input.password) : null,
      password_changed_at: input.password ? knex.fn.now() : null,
    })
    .returning(userColumns(knex));
  return user;
}

/** An account with what signing in checks; `publicUser` keeps what may be shown. */
export interface AccountRow extends User {
  password_hash: string | null;
  totp_secret: string | null;
  deleted_at: Date | null;
  erase_at: Date | null;
}

export const publicUser = ({ id, email, name, created_at, two_factor }: AccountRow): User => ({
  id,
  email,
  name,
  created_at,
  two_factor,
});

export function findUserByEmail(knex: Knex, email: string): Promise<AccountRow | undefined> {
  return knex('users')
    .where({ email: normalizeEmail(email) })
    .first([...userColumns(knex), 'password_hash', 'totp_secret', 'deleted_at', 'erase_at']);
}

export function getUser(knex: Knex, id: string): Promise<User | undefined> {
  return knex('users').where({ id }).first(userColumns(knex));
}

export async function setPassword(knex: Knex, userId: string, password: string): Promise<void> {
  await knex('users')
    .where({ id: userId })
    .update({ password_hash: await hashPassword(password), password_changed_at: knex.fn.now() });
}

export async function createSession(
  knex: Knex,
  input: { userId: string; workspaceId: string | null; ip?: string; userAgent?: string },
): Promise<{ token: string; csrf: string; session: Session }> {
  const session = newToken();
  const csrf = newToken();
  const [row] = await knex('sessions')
    .insert({
      id: randomUUID(),
      user_id: input.userId,
      token_hash: session.hash,
      csrf_hash: csrf.hash,
      workspace_id: input.workspaceId,
      ip: input.ip ?? null,
      user_agent: input.userAgent?.slice(0, 300) ?? null,
      expires_at: new Date(Date.now() + sessionDays * 86_400_000),
    })
    .returning(['id', 'user_id', 'workspace_id', 'created_at', 'expires_at']);
  return { token: session.token, csrf: csrf.token, session: row };
}

export interface ResolvedSession {
  session: Session & { csrf_hash: string };
  user: User;
}

/** The live session a cookie names, with its account; undefined when unknown, expired or revoked. */
export async function resolveSession(knex: Knex, token: string): Promise<ResolvedSession | undefined> {
  const row = await knex('sessions')
    .join('users', 'users.id', 'sessions.user_id')
    .where('sessions.token_hash', tokenHash(token))
    .whereNull('sessions.revoked_at')
    .where('sessions.expires_at', '>', knex.fn.now())
    .first(
      'sessions.id as session_id',
      'sessions.workspace_id',
      'sessions.csrf_hash',
      'sessions.created_at as session_created_at',
      'sessions.expires_at',
      ...userColumns(knex),
    );
  if (!row) return undefined;
  return {
    session: {
      id: row.session_id,
      user_id: row.id,
      workspace_id: row.workspace_id,
      created_at: row.session_created_at,
      expires_at: row.expires_at,
      csrf_hash: row.csrf_hash,
    },
    user: { id: row.id, email: row.email, name: row.name, created_at: row.created_at, two_factor: row.two_factor },
  };
}

export const csrfMatches = (session: { csrf_hash: string }, presented: string | undefined) =>
  presented !== undefined && tokenHash(presented) === session.csrf_hash;

/** Ends sessions of an account: all of them, or all but the one still in use. Returns how many ended. */
export function revokeSessions(knex: Knex, userId: string, exceptSessionId?: string): Promise<number> {
  const q = knex('sessions').where({ user_id: userId }).whereNull('revoked_at');
  if (exceptSessionId) q.whereNot({ id: exceptSessionId });
  return q.update({ revoked_at: knex.fn.now() });
}

export async function revokeSession(knex: Knex, sessionId: string): Promise<void> {
  await knex('sessions').where({ id: sessionId }).update({ revoked_at: knex.fn.now() });
}

export async function setSessionWorkspace(knex: Knex, sessionId: string, workspaceId: string): Promise<void> {
  await knex('sessions').where({ id: sessionId }).update({ workspace_id: workspaceId });
}

// ---- memberships ----------------------------------------------------------------------------------------------

export interface Membership {
  workspace: Workspace;
  role: Role;
}

export async function addMember(knex: Knex, workspaceId: string, userId: string, role: Role): Promise<void> {
  await knex('memberships')
    .insert({ workspace_id: workspaceId, user_id: userId, role })
    .onConflict(['workspace_id', 'user_id'])
    .merge(['role']);
}

export async function membershipsOf(knex: Knex, userId: string): Promise<Membership[]> {
  const rows = await knex('memberships')
    .join('workspaces', 'workspaces.id', 'memberships.workspace_id')
    .where('memberships.user_id', userId)
    .whereNull('workspaces.deleted_at')
    .orderBy('workspaces.created_at')
    .select(
      'memberships.role',
      'workspaces.id',
      'workspaces.name',
      'workspaces.plan',
      'workspaces.api_enabled',
      'workspaces.created_at',
    );
  return rows.map(({ role, ...workspace }) => ({ role, workspace }));
}

/** The workspace a session works in: the one it chose while still a member there, else the person's first. */
export const currentMembership = (memberships: Membership[], workspaceId: string | null | undefined) =>
  memberships.find((m) => m.workspace.id === workspaceId) ?? memberships[0];

export async function membership(knex: Knex, userId: string, workspaceId: string): Promise<Membership | undefined> {
  return (await membershipsOf(knex, userId)).find((m) => m.workspace.id === workspaceId);
}

export interface Member {
  user_id: string;
  email: string;
  name: string;
  role: Role;
  two_factor: boolean;
  joined_at: Date;
}

const members = (knex: Knex, workspaceId: string) =>
  knex('memberships')
    .join('users', 'users.id', 'memberships.user_id')
    .where('memberships.workspace_id', workspaceId)
    .whereNull('users.deleted_at')
    .select(
      'users.id as user_id',
      'users.email',
      'users.name',
      'memberships.role',
      knex.raw('users.totp_secret is not null as two_factor'),
      'memberships.created_at as joined_at',
    );

export function listMembers(knex: Knex, workspaceId: string): Promise<Member[]> {
  return members(knex, workspaceId).orderBy('memberships.created_at');
}

/** A page of the workspace's members, in the order they joined; the cursor is the last one's (joined_at, user_id). */
export async function listMembersPage(
  knex: Knex,
  workspaceId: string,
  page: { limit: number; cursor?: string },
): Promise<{ data: Member[]; next_cursor: string | null }> {
  const q = members(knex, workspaceId).select(knex.raw('memberships.created_at::text as cursor_at'));
  if (page.cursor) {
    const after = decodeTimeCursor(page.cursor);
    q.whereRaw('(memberships.created_at, memberships.user_id) > (?::timestamptz, ?::uuid)', after);
  }
  const rows: (Member & { cursor_at: string })[] = await q
    .orderBy([{ column: 'memberships.created_at' }, { column: 'memberships.user_id' }])
    .limit(page.limit + 1);
  const { data, next_cursor } = cursorPage(rows, page.limit, (m) => [m.cursor_at, m.user_id]);
  return { data: data.map(({ cursor_at: _at, ...m }) => m), next_cursor };
}

/** A one-hour, single-use link to set a new password. */
export async function createPasswordReset(knex: Knex, userId: string, publicUrl: string): Promise<{ url: string }> {
  const { token, hash } = newToken();
  await knex('password_resets').insert({
    token_hash: hash,
    user_id: userId,
    expires_at: new Date(Date.now() + 3_600_000),
  });
  return { url: `${publicUrl}/reset-password/${token}` };
}
