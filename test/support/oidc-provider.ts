// A real OpenID Connect provider for tests (the oidc-provider package, certified by the OpenID Foundation),
// on a free loopback port. Its development sign-in pages accept any login name; the account's email is that
// name, verified. With `connections`, a second client stands for an OAuth 2.0 connection: it may refresh tokens
// (offline_access), and the provider revokes (RFC 7009) and introspects (RFC 7662) tokens.
import assert from 'node:assert/strict';
import http, { type Server } from 'node:http';

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The client of OAuth 2.0 connections, with `connections`. */
  connectionClient?: { id: string; secret: string };
  close(): Promise<void>;
}

export async function startOidcProvider(
  redirectUri: string,
  opts: { connections?: { redirectUri: string } } = {},
): Promise<TestOidcProvider> {
  const { default: Provider } = (await import('oidc-provider')) as unknown as {
    default: new (issuer: string, config: object) => { listen(port: number): Server; callback(): unknown };
  };
  const server: Server = await new Promise((resolve) => {
    const s = http.createServer();
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const clientId = 'cadre-test';
  const clientSecret = 'a client secret of the test provider';
  const connectionClient = { id: 'cadre-connections', secret: 'the client secret of connections at the test provider' };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
      ...(opts.connections
        ? [
            {
              client_secret: connectionClient.secret,
              client_id: connectionClient.id,
              redirect_uris: [opts.connections.redirectUri],
              grant_types: ['authorization_code', 'refresh_token'],
              response_types: ['code'],
            },
          ]
        : []),
    ],
    ...(opts.connections ? { features: { revocation: { enabled: true }, introspection: { enabled: true } } } : {}),
    cookies: { keys: ['test cookie key of the provider'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: () => ({ sub: id, email: id, email_verified: true, name: `SSO ${id.split('@')[0]}` }),
    }),
    pkce: { required: () => true },
  });
  server.on('request', provider.callback() as Parameters<Server['on']>[1]);
  return {
    issuer,
    clientId,
    clientSecret,
    ...(opts.connections ? { connectionClient: { id: connectionClient.id, secret: connectionClient.secret } } : {}),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Points a workspace's single sign-on at the provider (PUT /v1/workspace/sso, with an owner's key): people whose
 * email is at `emailDomain` sign in there and join as operators. One domain signs in one workspace of the shared
 * test database, so each suite names its own.
 */
export async function configureWorkspaceSso(
  apiUrl: string,
  key: string,
  idp: TestOidcProvider,
  emailDomain: string,
): Promise<void> {
  const res = await fetch(`${apiUrl}/v1/workspace/sso`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      email_domain: emailDomain,
      default_role: 'operator',
    }),
  });
  assert.equal(res.status, 200, await res.text());
}
