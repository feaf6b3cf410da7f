// Who is calling, and may they? Two ways in: a Bearer API key (integrations; scopes; the workspace must have API
// access) or a console session cookie (people; the role of their membership; a CSRF token on every change).
// A missing or bad credential is 401 (with WWW-Authenticate for keys); a credential without the right is 403.
import { createHash } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { touchApiKey, verifyApiKey } from '../db/api-keys';
import {
  csrfMatches,
  currentMembership,
  membershipsOf,
  resolveSession,
  setSessionWorkspace,
  type Session,
  type User,
} from '../db/accounts';
import { roleAllows, scopesAllow, type Permission } from '../db/roles';
import type { Workspace } from '../db/workspaces';
import type { Caller } from '../services/caller';
import { ApiError } from './problem';
import { TokenBuckets } from './rate-limit';

export const sessionCookie = 'cadre_session';
export const csrfCookie = 'cadre_csrf';
export const csrfHeader = 'x-csrf-token';

declare module 'express-serve-static-core' {
  interface Request {
    auth?: Caller;
    /** A signed-in person, on account routes that need no workspace. */
    account?: { user: User; session: Session & { csrf_hash: string } };
  }
}

/** A cookie's value; one that is not valid percent-encoding (no cookie this service set) counts as no cookie. */
export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

const challenge = (error: string, description: string) => ({
  'WWW-Authenticate': `Bearer realm="cadre", error="${error}", error_description="${description}"`,
});

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The signed-in person of a session cookie, with the CSRF check for requests that change something. */
export function sessionAccount(knex: Knex): RequestHandler {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const token = readCookie(req, sessionCookie);
    // A person's own routes (password, two-factor, signing out everywhere) are theirs alone: a key cannot act for them.
    if (!token && req.get('authorization'))
      throw new ApiError(
        401,
        'session_required',
        'this route needs a signed-in session (the console session cookie); an API key cannot be used for it',
      );
    if (!token) throw new ApiError(401, 'not_signed_in', 'sign in first');
    const found = await resolveSession(knex, token);
    if (!found) throw new ApiError(401, 'session_expired', 'your session has ended; sign in again');
    if (!safeMethods.has(req.method) && !csrfMatches(found.session, req.get(csrfHeader))) {
      throw new ApiError(
        403,
        'csrf_token_invalid',
        `send the ${csrfCookie} cookie's value in the ${csrfHeader} header with every request that changes something`,
      );
    }
    req.account = found;
    next();
  };
}

/**
 * Keys verified a moment ago, by a digest of the whole header (never the key itself). Only a run start takes one
 * (`startsRun`): the statement that opens the run checks the key again (db/open-run.ts), so a key revoked meanwhile
 * opens nothing, and the start of every event saves a round trip to the database.
 */
const recentKeys = new Map<string, { caller: Caller; until: number }>();
const recentKeyMs = 60_000;
const maxRecentKeys = 1_000;
const keyDigest = (header: string) => createHash('sha256').update(header).digest('base64');

function rememberKey(header: string, caller: Caller): void {
  if (recentKeys.size >= maxRecentKeys) recentKeys.delete(recentKeys.keys().next().value!);
  recentKeys.set(keyDigest(header), { caller, until: Date.now() + recentKeyMs });
}

function recentCaller(knex: Knex, header: string): Caller | undefined {
  const digest = keyDigest(header);
  const recent = recentKeys.get(digest);
  if (!recent) return undefined;
  if (recent.until < Date.now()) {
    recentKeys.delete(digest);
    return undefined;
  }
  void touchApiKey(knex, recent.caller.key!.id).catch(() => undefined);
  return { ...recent.caller };
}

/** The routes that start a run, through startRun with the key (api/routes/agents.ts): they check it again. */
const startsRun = (req: Request) => req.method === 'POST' && /^\/agents\/[^/]+\/(run|manual-run)$/.test(req.path);

/**
 * Verifies the request's API key afresh, forgetting the verification remembered for it: throws the refusal (a 401
 * or 403), or returns the workspace as it now is.
 */
export async function verifyKeyAgain(knex: Knex, req: Request): Promise<Workspace> {
  const header = req.get('authorization')!;
  recentKeys.delete(keyDigest(header));
  req.auth = await callerFromKey(knex, header);
  return req.auth.workspace;
}

async function callerFromKey(knex: Knex, header: string): Promise<Caller> {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) {
    throw new ApiError(
      401,
      'malformed_authorization',
      'the Authorization header must be "Bearer <API_KEY>"',
      challenge('invalid_request', 'malformed Authorization header'),
    );
  }
  const check = await verifyApiKey(knex, m[1]);
  if (!check.ok) {
    const detail = {
      malformed: 'that is not a Cadre API key (they look like cadre_xxxxxxxxxxxx_…)',
      unknown: 'that API key is not known; check for typos or create a new key',
      revoked: 'that API key has been revoked; create a new key',
      expired: 'that API key has expired; create a new key',
    }[check.reason];
    throw new ApiError(401, `${check.reason}_api_key`, detail, challenge('invalid_token', `${check.reason} API key`));
  }
  if (!check.workspace.api_enabled) {
    throw new ApiError(
      403,
      'api_access_disabled',
      'API access is not enabled for this workspace; ask your operator to enable it (npx cadre workspace enable-api <workspace id>)',
    );
  }
  void touchApiKey(knex, check.key.id).catch(() => undefined);
  const caller = { workspace: check.workspace, key: check.key, actor: `API key "${check.key.name}"` };
  rememberKey(header, caller);
  return caller;
}

/** The workspace a session works in: the one it chose, while still a member, else the person's first. */
async function callerFromSession(knex: Knex, req: Request): Promise<Caller> {
  const { user, session } = req.account!;
  const memberships = await membershipsOf(knex, user.id);
  const chosen = currentMembership(memberships, session.workspace_id);
  if (!chosen) {
    throw new ApiError(403, 'no_workspace', 'you are not a member of any workspace; ask an admin for an invitation');
  }
  if (chosen.workspace.id !== session.workspace_id) await setSessionWorkspace(knex, session.id, chosen.workspace.id);
  return { workspace: chosen.workspace, user, role: chosen.role, session, actor: user.email };
}

/**
 * Who is calling. API keys are also held to a request rate (`rateLimit` a second on average, bursts of ten
 * seconds' worth; 0 → none): people in the console click, integrations loop.
 */
export function authenticate(knex: Knex, rateLimit = 0, budgetScope = ''): RequestHandler {
  const withSession = sessionAccount(knex);
  const keyRates =
    rateLimit > 0 ? new TokenBuckets(knex, `${budgetScope}api-key`, rateLimit, rateLimit * 10) : undefined;
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    if (header) {
      req.auth = (startsRun(req) && recentCaller(knex, header)) || (await callerFromKey(knex, header));
      const wait = (await keyRates?.take(req.auth.key!.id)) ?? 0;
      if (wait > 0) {
        throw new ApiError(
          429,
          'rate_limited',
          `this API key sent more than ${rateLimit} requests a second; wait ${wait} s (Retry-After), then send them more evenly`,
          { 'Retry-After': String(wait) },
        );
      }
      return next();
    }
    if (!readCookie(req, sessionCookie)) {
      throw new ApiError(
        401,
        'missing_api_key',
        'send your API key as "Authorization: Bearer <API_KEY>", or sign in to the console',
        { 'WWW-Authenticate': 'Bearer realm="cadre"' },
      );
    }
    await withSession(req, res, () => undefined);
    req.auth = await callerFromSession(knex, req);
    next();
  };
}

export function requirePermission(needed: Permission): RequestHandler {
  return (req, _res, next) => {
    const { key, role } = req.auth!;
    if (key && !scopesAllow(key.scopes, needed)) {
      const scope = needed === 'admin' ? 'manage' : needed;
      throw new ApiError(403, 'missing_scope', `this API key lacks the "${scope}" scope; create a key with it`);
    }
    if (role && !roleAllows(role, needed)) {
      throw new ApiError(
        403,
        'role_forbidden',
        `your role in this workspace (${role}) does not allow this; ask an admin or owner`,
      );
    }
    next();
  };
}
