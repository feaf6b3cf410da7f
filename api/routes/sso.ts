// Single sign-on routes. Public: find a workspace's provider by email domain, send the browser to it, and take
// it back (a session, joining the workspace with its default role when new). Workspace admins on the Enterprise
// plan set the provider up.
import { Router, type Request, type Response } from 'express';
import { jsonSchema, obj, ref, type Route } from '../openapi-schemas';
import { bodies } from '../request-bodies';
import { addMember, createSession, createUser, findUserByEmail, membership } from '../../db/accounts';
import { recordAudit } from '../../db/audit';
import type { Role } from '../../db/roles';
import { getWorkspace } from '../../db/workspaces';
import { auditRequest } from '../audit-request';
import { requirePermission } from '../auth';
import { setSessionCookies } from '../session-cookies';
import { ApiError } from '../problem';
import { finishSsoLogin, providerConfig, startSsoLogin, type SsoSettings } from '../sso';
import { jsonBody, param, parseBody } from '../validation';
import type { AccountDeps } from './accounts';
import { parseQuery, queries } from '../query-params';

const settingsJson = (s: SsoSettings) => ({
  issuer: s.issuer,
  client_id: s.client_id,
  email_domain: s.email_domain,
  default_role: s.default_role,
});

/** Only paths of this service, so a crafted `next` cannot send someone elsewhere after signing in. */
const localPath = (next: unknown) =>
  typeof next === 'string' && next.startsWith('/') && !next.startsWith('//') ? next : '/dashboard';

export function ssoPublicRoutes(deps: AccountDeps): Router {
  const { knex, secrets } = deps;
  const r = Router();
  const callbackUrl = `${deps.links.publicUrl}/v1/auth/sso/callback`;

  const settingsOf = async (workspaceId: string) => {
    const ws = await getWorkspace(knex, workspaceId);
    const settings: SsoSettings | undefined = ws
      ? await knex('workspace_sso').where({ workspace_id: ws.id }).first()
      : undefined;
    if (!ws || !settings || ws.plan !== 'enterprise') {
      throw new ApiError(404, 'sso_not_configured', 'single sign-on is not set up for this workspace');
    }
    return settings;
  };

  r.get('/auth/sso/discover', async (req, res) => {
    const { email } = parseQuery(queries.discoverSso, req.query);
    const domain = email.toLowerCase().split('@')[1];
    const found = await knex('workspace_sso').where({ email_domain: domain }).first('workspace_id');
    if (!found) throw new ApiError(404, 'sso_not_configured', `single sign-on is not set up for ${domain}`);
    await settingsOf(found.workspace_id);
    res.json({ workspace_id: found.workspace_id, start_url: `/v1/auth/sso/${found.workspace_id}/start` });
  });

  r.get('/auth/sso/:workspaceId/start', async (req, res) => {
    const settings = await settingsOf(param(req, 'workspaceId'));
    const { next } = parseQuery(queries.startSso, req.query);
    const url = await startSsoLogin(knex, secrets, settings, callbackUrl, localPath(next));
    res.redirect(302, url.href);
  });

  // The browser lands here from the provider: a refusal goes back to the sign-in page, in words.
  r.get('/auth/sso/callback', async (req, res) => {
    try {
      await signInFromProvider(req, res);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      res.redirect(302, `/login?sso_error=${encodeURIComponent(err.message)}`);
    }
  });

  const signInFromProvider = async (req: Request, res: Response) => {
    const here = new URL(req.originalUrl, deps.links.publicUrl);
    const person = await finishSsoLogin(knex, secrets, here);
    const known = await findUserByEmail(knex, person.email);
    if (known?.deleted_at) throw new ApiError(403, 'account_deleted', 'this account was deleted; recover it first');
    const user = known ?? (await createUser(knex, { email: person.email, name: person.name }));
    if (!(await membership(knex, user.id, person.workspaceId))) {
      await addMember(knex, person.workspaceId, user.id, person.defaultRole as Role);
      await recordAudit(knex, {
        workspace_id: person.workspaceId,
        user_id: user.id,
        actor: user.email,
        action: 'member.joined',
        target: user.email,
        details: { role: person.defaultRole, via: 'sso' },
        ip: req.ip,
      });
    }
    const s = await createSession(knex, {
      userId: user.id,
      workspaceId: person.workspaceId,
      ip: req.ip,
      userAgent: req.get('user-agent'),
    });
    await recordAudit(knex, {
      workspace_id: person.workspaceId,
      user_id: user.id,
      actor: user.email,
      action: 'sso.login',
      details: { via: 'sso' },
      ip: req.ip,
    });
    setSessionCookies(res, s, deps.links.publicUrl);
    res.redirect(302, person.next);
  };

  return r;
}

export function ssoConfigRoutes(deps: AccountDeps): Router {
  const { knex, secrets } = deps;
  const r = Router();
  r.get('/workspace/sso', requirePermission('admin'), async (req, res) => {
    const settings = await knex('workspace_sso').where({ workspace_id: req.auth!.workspace.id }).first();
    if (!settings) throw new ApiError(404, 'sso_not_configured', 'single sign-on is not set up for this workspace');
    res.json(settingsJson(settings));
  });

  r.put('/workspace/sso', requirePermission('admin'), ...jsonBody(deps.bodyLimit), async (req, res) => {
    if (req.auth!.workspace.plan !== 'enterprise') {
      throw new ApiError(403, 'plan_feature', 'single sign-on comes with the Enterprise plan');
    }
    const input = parseBody(bodies.configureSso, req.body);
    // An issuer that cannot be discovered is a setting to correct (422), not a fault of this server.
    await providerConfig(input.issuer, input.client_id, input.client_secret).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 502) throw new ApiError(422, err.code, err.message);
      throw err;
    });
    const row = {
      workspace_id: req.auth!.workspace.id,
      issuer: input.issuer,
      client_id: input.client_id,
      client_secret: secrets.seal(input.client_secret),
      email_domain: input.email_domain ?? null,
      default_role: input.default_role,
      updated_at: knex.fn.now(),
    };
    try {
      await knex('workspace_sso').insert(row).onConflict('workspace_id').merge();
    } catch (err) {
      if ((err as { code?: string }).code === '23505') {
        throw new ApiError(409, 'sso_domain_taken', `another workspace signs in ${input.email_domain} already`);
      }
      throw err;
    }
    await auditRequest(knex, req, 'sso.configured', input.issuer, {
      client_id: input.client_id,
      email_domain: input.email_domain,
    });
    res.json(settingsJson({ ...row, client_secret: '' } as SsoSettings));
  });

  r.delete('/workspace/sso', requirePermission('admin'), async (req, res) => {
    const n = await knex('workspace_sso').where({ workspace_id: req.auth!.workspace.id }).delete();
    if (n === 0) throw new ApiError(404, 'sso_not_configured', 'single sign-on is not set up for this workspace');
    await auditRequest(knex, req, 'sso.removed', req.auth!.workspace.name);
    res.status(204).end();
  });

  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const ssoRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/auth/sso/discover',
    id: 'discoverSso',
    summary: "Single sign-on: the workspace whose provider signs in this email's domain (?email=)",
    scope: 'public',
    ok: { 200: obj({ workspace_id: { type: 'string', format: 'uuid' }, start_url: { type: 'string' } }) },
    errors: [400, 404],
  },
  {
    method: 'get',
    path: '/auth/sso/{workspaceId}/start',
    id: 'startSso',
    summary: "Single sign-on: redirects to the workspace's OpenID Connect provider (PKCE, state, nonce)",
    scope: 'public',
    ok: { 302: null },
    errors: [404, 422, 502],
  },
  {
    method: 'get',
    path: '/auth/sso/callback',
    id: 'finishSso',
    summary:
      "Single sign-on: the provider's redirect back; signs in and redirects to the console (or to /login with the reason)",
    scope: 'public',
    ok: { 302: null },
  },
  {
    method: 'get',
    path: '/workspace/sso',
    id: 'getSso',
    summary: 'The single sign-on provider of the workspace (never its secret)',
    scope: 'admin',
    ok: { 200: ref('SsoSettings') },
  },
  {
    method: 'put',
    path: '/workspace/sso',
    id: 'configureSso',
    summary: 'Set up single sign-on with an OpenID Connect provider (Enterprise plan; checked by discovery)',
    scope: 'admin',
    body: jsonSchema(bodies.configureSso),
    ok: { 200: ref('SsoSettings') },
    errors: [409, 422],
  },
  {
    method: 'delete',
    path: '/workspace/sso',
    id: 'removeSso',
    summary: 'Turn single sign-on off',
    scope: 'admin',
    ok: { 204: null },
  },
];
