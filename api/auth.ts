// Bearer API keys, per workspace, with scopes. A missing or bad key is 401 with WWW-Authenticate; a key
// whose workspace has no API access, or that lacks the scope, is 403.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { touchApiKey, verifyApiKey, type ApiKeyRecord, type Scope } from '../db/api-keys';
import type { Workspace } from '../db/workspaces';
import { ApiError } from './problem';

declare module 'express-serve-static-core' {
  interface Request {
    auth?: { key: ApiKeyRecord; workspace: Workspace };
  }
}

const challenge = (error: string, description: string) => ({
  'WWW-Authenticate': `Bearer realm="cadre", error="${error}", error_description="${description}"`,
});

export function authenticate(knex: Knex): RequestHandler {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    if (!header) {
      throw new ApiError(401, 'missing_api_key', 'send your API key as "Authorization: Bearer <API_KEY>"', {
        'WWW-Authenticate': 'Bearer realm="cadre"',
      });
    }
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
      }[check.reason];
      throw new ApiError(401, `${check.reason}_api_key`, detail, challenge('invalid_token', `${check.reason} API key`));
    }
    const workspace = check.workspace;
    if (!workspace.api_enabled) {
      throw new ApiError(
        403,
        'api_access_disabled',
        'API access is not enabled for this workspace; ask your operator to enable it (npx cadre workspace enable-api <workspace id>)',
      );
    }
    void touchApiKey(knex, check.key.id).catch(() => undefined);
    req.auth = { key: check.key, workspace };
    next();
  };
}

export function requireScope(scope: Scope): RequestHandler {
  return (req, _res, next) => {
    const scopes = req.auth!.key.scopes;
    // manage implies read: whoever can change an agent can see it.
    if (!scopes.includes(scope) && !(scope === 'read' && scopes.includes('manage'))) {
      throw new ApiError(403, 'missing_scope', `this API key lacks the "${scope}" scope; create a key with it`);
    }
    next();
  };
}
