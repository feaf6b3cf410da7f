// People's own routes: sign up, sign in (throttled; TOTP when enabled), sign out here or everywhere, password
// change and reset, two-factor setup, switching and creating workspaces, and accepting an invitation. These
// work with the console's session cookie, not API keys: an API key belongs to a workspace, not to a person.
import { randomBytes, randomUUID } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { jsonSchema, nullable, obj, ref, ts, type Route } from '../openapi-schemas';
import type { Knex } from 'knex';
import * as OTPAuth from 'otpauth';
import { bodies, password } from '../request-bodies';
import {
  addMember,
  checkPassword,
  createSession,
  createUser,
  findUserByEmail,
  membershipsOf,
  normalizeEmail,
  revokeSession,
  revokeSessions,
  setPassword,
  setSessionWorkspace,
  createPasswordReset,
  currentMembership,
  publicUser,
  type User,
} from '../../db/accounts';
import { recordAccountAudit, recordAudit } from '../../db/audit';
import { accountErasureId, markAccountDeleted, restoreAccount } from '../../db/account-deletion';
import type { accountErasure } from '../../workflows/account-erasure';
import { permissionsOf, roleRank, roles, type Role } from '../../db/roles';
import type { SecretBox } from '../../db/secret-box';
import { tokenHash } from '../../db/tokens';
import { createWorkspace } from '../../db/workspaces';
import { sendAccountMail, type SmtpSettings } from '../account-mail';
import { readCookie, sessionAccount, sessionCookie } from '../auth';
import { clearSessionCookies, setSessionCookies } from '../session-cookies';
import { ApiError } from '../problem';
import { RateLimiter } from '../rate-limit';
import { jsonBody, param, parseBody } from '../validation';
import type { RouteDeps } from './agents';
import type { Adapters } from '../../services/adapters';

export interface AccountDeps extends RouteDeps {
  secrets: SecretBox;
  smtp?: SmtpSettings;
  adapters: Pick<Adapters, 'mail'>;
  /** How long a deleted account can be recovered; 30 days unless configured. */
  accountRecoverySeconds?: number;
}

/** Failed sign-ins allowed per address and per client address within the window, before 429. */
export const loginThrottle = { perEmail: 5, perIp: 20, windowMs: 15 * 60_000 };

export function accountRoutes(deps: AccountDeps): Router {
  const { knex, secrets } = deps;
  const r = Router();
  const body = jsonBody(deps.bodyLimit);
  const signedIn = sessionAccount(knex);
  const byEmail = new RateLimiter(
    knex,
    `${deps.budgetScope ?? ''}login-email`,
    loginThrottle.perEmail,
    loginThrottle.windowMs,
  );
  const byIp = new RateLimiter(knex, `${deps.budgetScope ?? ''}login-ip`, loginThrottle.perIp, loginThrottle.windowMs);
  const setCookies = (res: Response, s: { token: string; csrf: string }) =>
    setSessionCookies(res, s, deps.links.publicUrl);
  const clearCookies = clearSessionCookies;

  /**
   * An event of a person's own account, for the audit log: they are both its subject and its actor. Given no
   * workspace, it is recorded in each workspace the person belongs to, where their admins read it.
   */
  const auditAccount = (
    req: Request,
    user: { id: string; email: string },
    action: string,
    extra: { workspace_id?: string | null; details?: Record<string, unknown>; target?: string } = {},
  ) =>
    extra.workspace_id === undefined
      ? recordAccountAudit(knex, { user_id: user.id, actor: user.email, action, ip: req.ip, ...extra })
      : recordAudit(knex, { user_id: user.id, actor: user.email, action, ip: req.ip, ...extra });

  /** Changes that could lock a person out (password, two-factor, deletion) ask for the password again. */
  const assertPassword = async (userId: string, password: string, detail = 'the password is not right') => {
    const stored = await knex('users').where({ id: userId }).first('password_hash');
    if (!(await checkPassword(stored?.password_hash, password))) throw new ApiError(403, 'wrong_password', detail);
  };

  /** Signs a person in: a new session in their chosen (or first) workspace, cookies set, the answer. */
  const startSession = async (req: Request, res: Response, user: User, workspaceId?: string) => {
    const current = currentMembership(await membershipsOf(knex, user.id), workspaceId);
    const s = await createSession(knex, {
      userId: user.id,
      workspaceId: current?.workspace.id ?? null,
      ip: req.ip,
      userAgent: req.get('user-agent'),
    });
    setCookies(res, s);
    return { user, csrf_token: s.csrf, workspace_id: current?.workspace.id ?? null };
  };

  const me = async (user: User, workspaceId: string | null) => {
    const memberships = await membershipsOf(knex, user.id);
    const current = currentMembership(memberships, workspaceId);
    return {
      user,
      workspace: current
        ? { ...pickWorkspace(current.workspace), role: current.role, permissions: permissionsOf(current.role) }
        : null,
      workspaces: memberships.map((m) => ({
        ...pickWorkspace(m.workspace),
        role: m.role,
        permissions: permissionsOf(m.role),
      })),
    };
  };

  r.post('/auth/signup', ...body, async (req, res) => {
    const input = parseBody(bodies.signUp, req.body);
    if (await findUserByEmail(knex, input.email)) {
      throw new ApiError(
        409,
        'email_taken',
        'an account with this email already exists; sign in or reset the password',
      );
    }
    const { user, workspace } = await knex.transaction(async (trx) => {
      const user = await createUser(trx, input);
      const workspace = await createWorkspace(trx, input.workspace_name ?? `${input.name || user.email}'s workspace`);
      await addMember(trx, workspace.id, user.id, 'owner');
      return { user, workspace };
    });
    await auditAccount(req, user, 'account.created', { workspace_id: workspace.id });
    res.status(201).json(await startSession(req, res, user, workspace.id));
  });

  r.post('/auth/login', ...body, async (req, res) => {
    const input = parseBody(bodies.signIn, req.body);
    const address = normalizeEmail(input.email);
    const wait = Math.max(await byEmail.blocked(address), await byIp.blocked(req.ip ?? ''));
    if (wait > 0) {
      throw new ApiError(
        429,
        'too_many_sign_in_attempts',
        `too many failed sign-ins; try again in ${Math.ceil(wait / 60)} minutes or reset your password`,
        { 'Retry-After': String(wait) },
      );
    }
    const user = await findUserByEmail(knex, address);
    const fail = async (code: string, detail: string) => {
      await byEmail.take(address);
      await byIp.take(req.ip ?? '');
      // A known address's failures reach its workspaces' admins; an unknown one belongs to no workspace.
      const failed = { actor: address, action: 'login.failed', details: { reason: code }, ip: req.ip };
      await (user ? recordAccountAudit(knex, { ...failed, user_id: user.id }) : recordAudit(knex, failed));
      throw new ApiError(401, code, detail);
    };
    if (!user || !(await checkPassword(user.password_hash, input.password))) {
      await fail('invalid_credentials', 'that email and password do not match an account');
    }
    if (user!.deleted_at) {
      throw new ApiError(
        403,
        'account_deleted',
        `this account was deleted; it can be recovered until ${new Date(user!.erase_at!).toISOString()} (POST /v1/auth/recover with the same email and password)`,
      );
    }
    if (user!.totp_secret) {
      if (!input.totp_code && !input.recovery_code) {
        throw new ApiError(401, 'two_factor_required', 'enter the six-digit code from your authenticator app');
      }
      const ok = input.totp_code
        ? totpFor(user!.email, secrets.open(user!.totp_secret)).validate({ token: input.totp_code, window: 1 }) !== null
        : await useRecoveryCode(knex, user!.id, input.recovery_code!);
      if (!ok) await fail('invalid_two_factor_code', 'that code is not right; check your authenticator app');
    }
    await byEmail.reset(address);
    const signedIn = await startSession(req, res, publicUser(user!));
    // Recorded in every workspace of the person (the session may switch to any), so admins see who signed in.
    await auditAccount(req, user!, 'login.succeeded', { details: { workspace_id: signedIn.workspace_id } });
    res.json(signedIn);
  });

  r.post('/auth/password-reset', ...body, async (req, res) => {
    const input = parseBody(bodies.requestPasswordReset, req.body);
    const user = await findUserByEmail(knex, input.email);
    // The same answer whether or not the address has an account.
    if (user) {
      const { url } = await createPasswordReset(knex, user.id, deps.links.publicUrl);
      const sent = await sendAccountMail(deps, {
        to: user.email,
        subject: 'Reset your Cadre password',
        text: `Someone asked to reset the password of your Cadre account.\n\nSet a new one here (the link works for an hour, once):\n${url}\n\nIf it was not you, ignore this message.`,
        key: `reset:${randomUUID()}`,
      });
      await auditAccount(req, user, 'password.reset_requested', { details: { emailed: sent } });
    }
    res.status(202).json({
      status: 'accepted',
      detail: deps.smtp?.url
        ? 'if the address has an account, a reset link is on its way'
        : 'no mail server is configured: ask your operator for a reset link (npx cadre user reset-link <email>)',
    });
  });

  r.post('/auth/password-reset/confirm', ...body, async (req, res) => {
    const input = parseBody(bodies.confirmPasswordReset, req.body);
    const userId = await knex.transaction(async (trx) => {
      const row = await trx('password_resets')
        .where({ token_hash: tokenHash(input.token) })
        .whereNull('used_at')
        .where('expires_at', '>', trx.fn.now())
        .forUpdate()
        .first('user_id');
      if (!row) return undefined;
      await trx('password_resets')
        .where({ token_hash: tokenHash(input.token) })
        .update({ used_at: trx.fn.now() });
      return row.user_id as string;
    });
    if (!userId)
      throw new ApiError(410, 'reset_link_invalid', 'this reset link has expired or was used; ask for a new one');
    await setPassword(knex, userId, input.password);
    const ended = await revokeSessions(knex, userId);
    const user = (await knex('users').where({ id: userId }).first('id', 'email'))!;
    await auditAccount(req, user, 'password.reset', { details: { sessions_ended: ended } });
    res.status(204).end();
  });

  // ---- the signed-in person -----------------------------------------------------------------------------------

  r.get('/me', signedIn, async (req, res) => {
    res.json(await me(req.account!.user, req.account!.session.workspace_id));
  });

  r.put('/me/workspace', signedIn, ...body, async (req, res) => {
    const { workspace_id } = parseBody(bodies.switchWorkspace, req.body);
    const memberships = await membershipsOf(knex, req.account!.user.id);
    if (!memberships.some((m) => m.workspace.id === workspace_id)) {
      throw new ApiError(404, 'workspace_not_found', 'you are not a member of that workspace');
    }
    await setSessionWorkspace(knex, req.account!.session.id, workspace_id);
    res.json(await me(req.account!.user, workspace_id));
  });

  r.post('/workspaces', signedIn, ...body, async (req, res) => {
    const { name } = parseBody(bodies.createWorkspace, req.body);
    const { user } = req.account!;
    const workspace = await knex.transaction(async (trx) => {
      // The person's row stays locked while their workspaces are counted: concurrent creates cannot both pass.
      await trx('users').where({ id: user.id }).forUpdate().first('id');
      const ownsFree = (await membershipsOf(trx, user.id)).some(
        (m) => m.role === 'owner' && m.workspace.plan === 'free',
      );
      if (ownsFree) {
        throw new ApiError(
          403,
          'plan_limit_workspaces',
          'the Free plan includes one workspace; upgrade the one you own to add more',
        );
      }
      const ws = await createWorkspace(trx, name);
      await addMember(trx, ws.id, user.id, 'owner');
      return ws;
    });
    await auditAccount(req, user, 'workspace.created', { workspace_id: workspace.id });
    await setSessionWorkspace(knex, req.account!.session.id, workspace.id);
    res.status(201).json(await me(user, workspace.id));
  });

  r.post('/me/password', signedIn, ...body, async (req, res) => {
    const input = parseBody(bodies.changePassword, req.body);
    const { user, session } = req.account!;
    await assertPassword(user.id, input.current_password, 'the current password is not right');
    await setPassword(knex, user.id, input.new_password);
    // Whoever knew the old password is signed out everywhere else; this session goes on.
    const ended = await revokeSessions(knex, user.id, session.id);
    await auditAccount(req, user, 'password.changed', { details: { sessions_ended: ended } });
    res.status(204).end();
  });

  r.post('/auth/logout', signedIn, async (req, res) => {
    await revokeSession(knex, req.account!.session.id);
    clearCookies(res);
    res.status(204).end();
  });

  r.post('/auth/logout-everywhere', signedIn, async (req, res) => {
    const { user } = req.account!;
    const ended = await revokeSessions(knex, user.id);
    await auditAccount(req, user, 'sessions.revoked_all', { details: { sessions_ended: ended } });
    clearCookies(res);
    res.status(204).end();
  });

  // ---- deletion and recovery --------------------------------------------------------------------------------

  r.delete('/me', signedIn, ...body, async (req, res) => {
    const input = parseBody(bodies.passwordOnly, req.body);
    const { user } = req.account!;
    await assertPassword(user.id, input.password);
    const seconds = deps.accountRecoverySeconds ?? 30 * 86_400;
    const eraseAt = new Date(Date.now() + seconds * 1000);
    const workspaces = await markAccountDeleted(knex, user.id, eraseAt);
    await deps.temporal.workflow.start<typeof accountErasure>('accountErasure', {
      workflowId: accountErasureId(user.id),
      taskQueue: deps.temporalConfig.taskQueue,
      args: [{ userId: user.id, afterSeconds: seconds }],
    });
    await auditAccount(req, user, 'account.deleted', { details: { workspaces, erase_at: eraseAt.toISOString() } });
    clearCookies(res);
    res.status(202).json({ status: 'deleted', erase_at: eraseAt.toISOString(), workspaces_deleted: workspaces });
  });

  r.post('/auth/recover', ...body, async (req, res) => {
    const input = parseBody(bodies.recoverAccount, req.body);
    const user = await findUserByEmail(knex, input.email);
    if (!user || !(await checkPassword(user.password_hash, input.password))) {
      throw new ApiError(401, 'invalid_credentials', 'that email and password do not match an account');
    }
    if (!user.deleted_at) throw new ApiError(409, 'account_not_deleted', 'this account is not deleted; sign in');
    // Stop the timer first: once it is terminated, nothing starts erasing the rows being restored.
    await deps.temporal.workflow
      .getHandle(accountErasureId(user.id))
      .terminate('the account was recovered')
      .catch(() => undefined);
    if (!(await restoreAccount(knex, user.id))) {
      throw new ApiError(410, 'account_erased', 'this account was already erased');
    }
    await auditAccount(req, user, 'account.recovered');
    res.json(await startSession(req, res, publicUser(user)));
  });

  // ---- two-factor authentication (TOTP, RFC 6238) ------------------------------------------------------------

  r.post('/me/two-factor', signedIn, async (req, res) => {
    const { user } = req.account!;
    const secret = new OTPAuth.Secret({ size: 20 });
    await knex('users')
      .where({ id: user.id })
      .update({ totp_pending: secrets.seal(secret.base32) });
    res.json({ secret: secret.base32, otpauth_url: totpFor(user.email, secret.base32).toString() });
  });

  r.post('/me/two-factor/confirm', signedIn, ...body, async (req, res) => {
    const { code } = parseBody(bodies.totpCode, req.body);
    const { user } = req.account!;
    const row = await knex('users').where({ id: user.id }).first('totp_pending');
    if (!row?.totp_pending)
      throw new ApiError(409, 'two_factor_not_started', 'start the setup first (POST /v1/me/two-factor)');
    const secret = secrets.open(row.totp_pending);
    if (totpFor(user.email, secret).validate({ token: code, window: 1 }) === null) {
      throw new ApiError(
        422,
        'invalid_two_factor_code',
        'that code is not right; check the time on your device and try again',
      );
    }
    const codes = Array.from({ length: 10 }, () => randomBytes(5).toString('hex'));
    await knex('users')
      .where({ id: user.id })
      .update({
        totp_secret: row.totp_pending,
        totp_pending: null,
        recovery_codes: JSON.stringify(codes.map(tokenHash)),
      });
    await auditAccount(req, user, 'two_factor.enabled');
    res.json({ recovery_codes: codes });
  });

  r.delete('/me/two-factor', signedIn, ...body, async (req, res) => {
    const input = parseBody(bodies.passwordOnly, req.body);
    const { user } = req.account!;
    await assertPassword(user.id, input.password);
    await knex('users').where({ id: user.id }).update({ totp_secret: null, totp_pending: null, recovery_codes: '[]' });
    await auditAccount(req, user, 'two_factor.disabled');
    res.status(204).end();
  });

  // ---- invitations, from the invited person's side -----------------------------------------------------------

  r.get('/public/invitations/:token', async (req, res) => {
    const inv = await openInvitation(knex, param(req, 'token'));
    res.json({ workspace_name: inv.workspace_name, role: inv.role, email: inv.email, expires_at: inv.expires_at });
  });

  // Signed in: joins as that account. Otherwise the body names the account: an existing one signs in with its
  // password, a new address creates one.
  r.post('/public/invitations/:token/accept', ...body, async (req, res) => {
    const inv = await openInvitation(knex, param(req, 'token'));
    let user: User;
    const cookie = readCookie(req, sessionCookie);
    if (cookie) {
      await signedIn(req, res, () => undefined);
      user = req.account!.user;
    } else {
      // An empty body joins as the signed-in person, and no one is signed in.
      const empty = typeof req.body === 'object' && req.body !== null && Object.keys(req.body).length === 0;
      if (empty) throw new ApiError(401, 'not_signed_in', 'sign in to join as yourself, or give an email and password');
      const input = parseBody(bodies.acceptInvitation, req.body);
      const existing = await findUserByEmail(knex, input.email);
      if (existing) {
        if (!(await checkPassword(existing.password_hash, input.password))) {
          throw new ApiError(
            401,
            'invalid_credentials',
            'an account with this email exists and that is not its password',
          );
        }
        user = publicUser(existing);
      } else {
        user = await createUser(knex, {
          email: input.email,
          password: newAccountPassword(input.password),
          name: input.name,
        });
      }
    }
    if (inv.email && inv.email !== user.email) {
      throw new ApiError(
        403,
        'invitation_for_someone_else',
        `this invitation is for ${inv.email}; sign in with that address`,
      );
    }
    const accepted = await knex.transaction(async (trx) => {
      const n = await trx('invitations')
        .where({ id: inv.id })
        .whereNull('accepted_at')
        .update({ accepted_at: trx.fn.now(), accepted_by: user.id });
      if (n === 0) return false;
      const current = await trx('memberships')
        .where({ workspace_id: inv.workspace_id, user_id: user.id })
        .first('role');
      // Accepting never lowers a role someone already has.
      if (!current || roleRank(current.role as Role) < roleRank(inv.role))
        await addMember(trx, inv.workspace_id, user.id, inv.role);
      return true;
    });
    if (!accepted) throw new ApiError(410, 'invitation_invalid', 'this invitation was already used');
    await auditAccount(req, user, 'member.joined', {
      workspace_id: inv.workspace_id,
      target: user.email,
      details: { role: inv.role, invitation_id: inv.id },
    });
    if (cookie) {
      await setSessionWorkspace(knex, req.account!.session.id, inv.workspace_id);
      res.json({ user, csrf_token: null, workspace_id: inv.workspace_id });
    } else {
      res.json(await startSession(req, res, user, inv.workspace_id));
    }
  });

  return r;
}

/**
 * A new account's password, given when accepting an invitation: held to the sign-up rule, which the body's schema
 * cannot say (the same field signs in to an existing account with whatever password it has), so its refusal has a
 * code of its own rather than invalid_body.
 */
function newAccountPassword(given: string): string {
  const checked = password.safeParse(given);
  if (checked.success) return checked.data;
  const message = checked.error.issues[0].message;
  throw new ApiError(
    422,
    'weak_password',
    `a new account's password: ${message}`,
    {},
    {
      errors: [{ path: 'password', message }],
    },
  );
}

const pickWorkspace = (w: { id: string; name: string; plan: string; api_enabled: boolean }) => ({
  id: w.id,
  name: w.name,
  plan: w.plan,
  api_enabled: w.api_enabled,
});

const totpFor = (label: string, secret: string) =>
  new OTPAuth.TOTP({ issuer: 'Cadre', label, secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30 });

/** Spends one recovery code: true when it was an unused one of this account. */
async function useRecoveryCode(knex: Knex, userId: string, code: string): Promise<boolean> {
  const hashed = tokenHash(code.toLowerCase());
  const n = await knex('users')
    .where({ id: userId })
    .whereRaw('recovery_codes \\? ?', [hashed])
    .update({ recovery_codes: knex.raw('recovery_codes - ?', [hashed]) });
  return n > 0;
}

async function openInvitation(knex: Knex, token: string) {
  const inv = await knex('invitations')
    .join('workspaces', 'workspaces.id', 'invitations.workspace_id')
    .where('invitations.token_hash', tokenHash(token))
    .first('invitations.*', 'workspaces.name as workspace_name');
  if (!inv) throw new ApiError(404, 'invitation_not_found', 'no such invitation; ask for a new link');
  if (inv.accepted_at || inv.revoked_at || new Date(inv.expires_at) <= new Date()) {
    throw new ApiError(
      410,
      'invitation_invalid',
      'this invitation has expired, was used or was withdrawn; ask for a new link',
    );
  }
  return inv as {
    id: string;
    workspace_id: string;
    workspace_name: string;
    role: Role;
    email: string | null;
    expires_at: Date;
  };
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const accountRouteDocs: Route[] = [
  {
    method: 'delete',
    path: '/me',
    id: 'deleteAccount',
    summary:
      'Delete your account (needs the password): it and the workspaces you alone own become inaccessible at once, recoverable until erase_at, then erased',
    scope: 'session',
    body: jsonSchema(bodies.passwordOnly),
    ok: {
      202: obj({
        status: { const: 'deleted' },
        erase_at: ts,
        workspaces_deleted: { type: 'array', items: { type: 'string', format: 'uuid' } },
      }),
    },
    errors: [403, 422],
  },
  {
    method: 'post',
    path: '/auth/recover',
    id: 'recoverAccount',
    summary: 'Recover a deleted account within its recovery period, with its email and password; signs in',
    scope: 'public',
    body: jsonSchema(bodies.recoverAccount),
    ok: { 200: ref('SignedIn') },
    errors: [400, 401, 409, 410, 415, 422],
  },
  {
    method: 'post',
    path: '/auth/signup',
    id: 'signUp',
    summary: 'Create an account and its own workspace (owner), and sign in',
    scope: 'public',
    body: jsonSchema(bodies.signUp),
    ok: { 201: ref('SignedIn') },
    errors: [400, 409, 415, 422],
  },
  {
    method: 'post',
    path: '/auth/login',
    id: 'signIn',
    summary: 'Sign in with email and password (and a TOTP or recovery code when two-factor is on); throttled',
    scope: 'public',
    body: jsonSchema(bodies.signIn),
    ok: { 200: ref('SignedIn') },
    errors: [400, 401, 403, 415, 422, 429],
  },
  {
    method: 'post',
    path: '/auth/password-reset',
    id: 'requestPasswordReset',
    summary: 'Email a one-hour reset link (the same answer whether or not the address has an account)',
    scope: 'public',
    body: jsonSchema(bodies.requestPasswordReset),
    ok: { 202: obj({ status: { type: 'string' }, detail: { type: 'string' } }) },
    errors: [400, 415, 422],
  },
  {
    method: 'post',
    path: '/auth/password-reset/confirm',
    id: 'resetPassword',
    summary: 'Set a new password with a reset link; every session of the account ends',
    scope: 'public',
    body: jsonSchema(bodies.confirmPasswordReset),
    ok: { 204: null },
    errors: [400, 410, 415, 422],
  },
  {
    method: 'post',
    path: '/auth/logout',
    id: 'signOut',
    summary: 'End this session',
    scope: 'session',
    ok: { 204: null },
  },
  {
    method: 'post',
    path: '/auth/logout-everywhere',
    id: 'signOutEverywhere',
    summary: 'End every session of the account',
    scope: 'session',
    ok: { 204: null },
  },
  {
    method: 'get',
    path: '/me',
    id: 'getMe',
    summary: 'The signed-in person, their workspaces and roles',
    scope: 'session',
    ok: { 200: ref('Me') },
  },
  {
    method: 'put',
    path: '/me/workspace',
    id: 'switchWorkspace',
    summary: 'Work in another of your workspaces',
    scope: 'session',
    body: jsonSchema(bodies.switchWorkspace),
    ok: { 200: ref('Me') },
    errors: [404, 422],
  },
  {
    method: 'post',
    path: '/workspaces',
    id: 'createWorkspace',
    summary: 'A new workspace you own (the Free plan allows one)',
    scope: 'session',
    body: jsonSchema(bodies.createWorkspace),
    ok: { 201: ref('Me') },
    errors: [403, 422],
  },
  {
    method: 'post',
    path: '/me/password',
    id: 'changePassword',
    summary: 'Change your password; your other sessions end',
    scope: 'session',
    body: jsonSchema(bodies.changePassword),
    ok: { 204: null },
    errors: [403, 422],
  },
  {
    method: 'post',
    path: '/me/two-factor',
    id: 'startTwoFactor',
    summary: 'Begin two-factor setup: a TOTP secret and its otpauth:// URL',
    scope: 'session',
    ok: { 200: obj({ secret: { type: 'string' }, otpauth_url: { type: 'string' } }) },
  },
  {
    method: 'post',
    path: '/me/two-factor/confirm',
    id: 'confirmTwoFactor',
    summary: 'Turn two-factor on with a first code; answers ten one-time recovery codes (shown once)',
    scope: 'session',
    body: jsonSchema(bodies.totpCode),
    ok: { 200: obj({ recovery_codes: { type: 'array', items: { type: 'string' } } }) },
    errors: [409, 422],
  },
  {
    method: 'delete',
    path: '/me/two-factor',
    id: 'disableTwoFactor',
    summary: 'Turn two-factor off (needs the password)',
    scope: 'session',
    body: jsonSchema(bodies.passwordOnly),
    ok: { 204: null },
    errors: [403, 422],
  },
  {
    method: 'get',
    path: '/public/invitations/{token}',
    id: 'openInvitation',
    summary: 'What an invitation link offers',
    scope: 'public',
    ok: {
      200: obj({
        workspace_name: { type: 'string' },
        role: { enum: [...roles] },
        email: nullable({ type: 'string' }),
        expires_at: ts,
      }),
    },
    errors: [404, 410],
  },
  {
    method: 'post',
    path: '/public/invitations/{token}/accept',
    id: 'acceptInvitation',
    summary: 'Join: as the signed-in person, or with an email and password (an existing account or a new one)',
    scope: 'public',
    // A signed-in person accepts as themselves with an empty body; otherwise email and password name the account.
    body: {
      ...jsonSchema(bodies.acceptInvitation.partial()),
      anyOf: [{ required: ['email', 'password'] }, { maxProperties: 0 }],
    },
    ok: { 200: ref('SignedIn') },
    errors: [400, 401, 403, 404, 410, 415, 422],
  },
];
