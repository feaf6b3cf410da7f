// A real OpenID Connect provider for tests (the oidc-provider package, certified by the OpenID Foundation),
// on a free loopback port. Its development sign-in pages accept any login name; the account's email is that
// name, verified.
import http, { type Server } from 'node:http';

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export async function startOidcProvider(redirectUri: string): Promise<TestOidcProvider> {
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
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
