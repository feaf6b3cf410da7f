// DNS rebinding, tried on every outbound client: a name answers an allowed address to its first lookup and a loopback
// one to every later lookup, as an attacker's name server does. The operator allows one internal address (127.0.0.2,
// `CADRE_HTTP_ALLOW_HOSTS=127.0.0.2`); Cadre's own services stand for 127.0.0.1. Whatever the client, it must connect
// to the address that was checked (127.0.0.2) and never to 127.0.0.1, also when the server there redirects it to
// 127.0.0.1.
import assert from 'node:assert/strict';
import nodeDns from 'node:dns';
import net from 'node:net';
import { checkConnection, completeConnectionConfig } from '../../activities/connectors/check';
import { verifySmtp } from '../../activities/connectors/email/send';
import { externalToolHandlers } from '../../activities/tools/handlers';
import type { ToolContext } from '../../activities/tools/tool-context';
import { connectionSchemas, type ConnectionKind } from '../../model/connection';
import { freePort } from '../support/ports';
import { rebindingDns, type RebindingDns } from '../support/rebinding-dns';

/** Listeners on the same port of both addresses, counting who was reached. */
interface Trap {
  port: number;
  allowed: number;
  internal: number;
  close(): void;
}

/**
 * 127.0.0.2 (allowed) answers an HTTP request with a redirect to 127.0.0.1, and closes a connection that sends
 * nothing (a database or mail client waiting for a greeting) at once; 127.0.0.1 only counts.
 */
async function trap(): Promise<Trap> {
  const port = await freePort();
  const t = { port, allowed: 0, internal: 0 } as Trap;
  const allowed = net.createServer((socket) => {
    t.allowed++;
    const idle = setTimeout(() => socket.destroy(), 100);
    socket.once('data', (data) => {
      clearTimeout(idle);
      if (/^[A-Z]+ /.test(data.toString('latin1')))
        socket.end(
          `HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:${port}/elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
        );
      else socket.destroy();
    });
    socket.on('error', () => {});
  });
  const internal = net.createServer((socket) => {
    t.internal++;
    socket.destroy();
  });
  await new Promise<void>((r) => allowed.listen(port, '127.0.0.2', r));
  await new Promise<void>((r) => internal.listen(port, '127.0.0.1', r));
  t.close = () => {
    allowed.close();
    internal.close();
  };
  return t;
}

describe('DNS rebinding: every outbound client connects to the address it checked', function () {
  this.timeout(60_000);
  const limits = { allowHosts: ['127.0.0.2'], mcpStdio: { servers: {} } } as never;
  let dns: RebindingDns;
  let t: Trap;
  let n = 0;
  /** A name not looked up before: its first answer is 127.0.0.2. */
  const fresh = () => `h${++n}.rebind.test`;

  before(async () => {
    dns = rebindingDns('127.0.0.2', '127.0.0.1');
    t = await trap();
  });
  after(() => {
    dns.restore();
    t.close();
  });
  beforeEach(() => {
    t.allowed = 0;
    t.internal = 0;
  });
  afterEach(async function () {
    if (this.currentTest?.state !== 'passed') return;
    await new Promise((r) => setTimeout(r, 200)); // a late second connection would still be counted
    assert.equal(t.internal, 0, 'a client reached 127.0.0.1');
  });

  /** Checks a connection of `kind` (it fails: nothing real listens) and asserts where it went. */
  async function check(kind: ConnectionKind, config: unknown, credentials: unknown) {
    const schemas = connectionSchemas[kind];
    await checkConnection(kind, schemas.config.parse(config), schemas.credentials.parse(credentials), limits).then(
      () => assert.fail(`the ${kind} check succeeded against the trap`),
      () => undefined,
    );
    assert.ok(t.allowed >= 1, `the ${kind} client never reached the address it was allowed`);
  }

  const db = (host: string) => ({ host, port: t.port, database: 'shop', user: 'app' });

  it('PostgreSQL (pg)', () => check('postgres', db(fresh()), { password: 'secret' }));
  it('MySQL and MariaDB (mysql2)', () => check('mysql', db(fresh()), { password: 'secret' }));
  it('an MCP server over HTTP: its stored headers go nowhere else', () =>
    check('mcp', { transport: 'http', url: `http://${fresh()}:${t.port}/mcp` }, { headers: { 'x-key': 'k' } }));
  it('an OAuth 2.0 provider (discovery)', () =>
    check(
      'oauth2',
      { issuer: `https://${fresh()}:${t.port}`, client_id: 'cadre', scopes: [] },
      { client_secret: 's' },
    ));
  it('CalDAV (tsdav)', () =>
    check('caldav', { server_url: `http://${fresh()}:${t.port}/dav/`, username: 'ann' }, { password: 'p' }));
  it('HubSpot (@hubspot/api-client, node-fetch)', () =>
    check('hubspot', { base_url: `http://${fresh()}:${t.port}` }, { access_token: 'pat-na1-secret' }));
  it('S3 (@aws-sdk/client-s3)', () =>
    check(
      's3',
      { bucket: 'invoices', region: 'us-east-1', endpoint: `http://${fresh()}:${t.port}`, force_path_style: true },
      { access_key_id: 'AKIA', secret_access_key: 'secret' },
    ));
  it('Stripe (stripe)', () =>
    check('stripe', { api_base: `http://${fresh()}:${t.port}` }, { secret_key: 'sk_test_1' }));
  it('Slack (@slack/web-api)', () =>
    check('slack', { api_url: `http://${fresh()}:${t.port}/api/` }, { bot_token: 'xoxb-secret' }));
  it('email: IMAP (imapflow)', () =>
    check(
      'email',
      { imap: { host: fresh(), port: t.port, secure: false, user: 'ann@example.com' } },
      { password: 'p' },
    ));

  it('email: SMTP (nodemailer)', async () => {
    const host = fresh();
    const config = connectionSchemas.email.config.parse({
      imap: { host: fresh(), port: t.port, secure: false, user: 'ann@example.com' },
      smtp: { host, port: t.port, secure: false },
    });
    const mailbox = { name: 'mail', kind: 'email', config, credentials: { password: 'p' }, version: 'v', limits };
    await assert.rejects(verifySmtp(mailbox as never));
    assert.equal(dns.lookups(host), 1, 'the name was resolved more than once');
    assert.ok(t.allowed >= 1);
  });

  it('a REST API connection fetching its OpenAPI document', async () => {
    await assert.rejects(
      completeConnectionConfig('openapi', { document_url: `http://${fresh()}:${t.port}/openapi.json` }, limits),
    );
    assert.ok(t.allowed >= 1);
  });

  it('the http.request tool (its redirect is answered, not followed)', async () => {
    const host = fresh();
    const ctx = { idempotencyKey: 'k', http: { allowHosts: ['127.0.0.2'] }, smtp: { from: 'x' } } as ToolContext;
    const answer = (await externalToolHandlers['http.request']!(
      { method: 'GET', url: `http://${host}:${t.port}/`, headers: {} } as never,
      ctx,
    )) as { status: number };
    assert.equal(answer.status, 307);
    assert.equal(dns.lookups(host), 1, 'the name was resolved more than once');
    assert.equal(t.allowed, 1);
  });

  it('a name that answers 127.0.0.1 once it was asked before is refused before any connection', async () => {
    const host = fresh();
    await new Promise((r) => nodeDns.lookup(host, r)); // the attacker's first answer is spent
    await assert.rejects(
      checkConnection('postgres', connectionSchemas.postgres.config.parse(db(host)), { password: 'p' }, limits),
      /resolves to 127\.0\.0\.1, a private or internal address/,
    );
    assert.equal(t.allowed, 0);
  });
});
