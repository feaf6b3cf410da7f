// cadre.config.ts and temporal.config.ts: defaults with no environment, overrides, one-line errors.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, databaseUrl, loadConfig } from '../../cadre.config';
import { loadTemporalConfig, searchAttributes } from '../../temporal.config';

function assertConfigError(fn: () => unknown, variable: string, detail?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    assert.equal(err.name, 'ConfigError');
    assert.equal(err.variable, variable);
    assert.ok(err.message.startsWith(`${variable}: `), err.message);
    assert.ok(!err.message.includes('\n'), `message should be one line: ${JSON.stringify(err.message)}`);
    if (detail) assert.match(err.message, detail);
    return true;
  });
}

describe('loadConfig', () => {
  it('has working defaults with an empty environment', () => {
    const c = loadConfig({});
    const dataDir = path.resolve('./data');
    assert.deepEqual(c, {
      dataDir,
      web: {
        host: '127.0.0.1',
        port: 3000,
        publicUrl: 'http://localhost:3000',
        bodyLimit: '1mb',
        rateLimit: 100,
        traceUrl: undefined,
      },
      db: { url: undefined, embedded: true, embeddedPort: 5433, embeddedDir: path.join(dataDir, 'pglite') },
      model: {
        apiKey: undefined,
        baseUrl: undefined,
        name: 'claude-sonnet-4-6',
        unavailableRetries: 4,
        retrySeconds: 15,
      },
      smtp: { url: undefined, from: 'Cadre <cadre@localhost>' },
      inbox: {
        smtpPort: undefined,
        smtpHost: '127.0.0.1',
        domain: 'localhost',
        maxBytes: 25 * 1024 * 1024,
        tls: undefined,
      },
      secretKey: undefined, // a key generated under the data dir is used (db/secret-box.ts)
      accountRecoverySeconds: 30 * 86_400,
      previousSecretKeys: [],
      http: { allowHosts: [] },
      mcp: { stdioServers: {}, stdioUser: 'nobody', stdioDir: path.join(c.dataDir, 'tmp', 'mcp') },
      warehouse: { dirs: [path.join(c.dataDir, 'warehouse')] },
      logLevel: 'info',
      logFormat: 'readable',
      // Metrics are off until an operator turns them on.
      metrics: {
        token: undefined,
        host: '127.0.0.1',
        webPort: undefined,
        workerPort: undefined,
        temporalPort: undefined,
      },
    });
    assert.ok(path.isAbsolute(c.dataDir));
  });

  it('reads the metrics settings: a token long enough, never repeated in an error, and an IP address to bind', () => {
    const token = 'a'.repeat(32);
    assert.deepEqual(
      loadConfig({
        CADRE_METRICS_TOKEN: token,
        CADRE_METRICS_HOST: '0.0.0.0',
        CADRE_METRICS_PORT: '9464',
        CADRE_WORKER_METRICS_PORT: '9465',
        CADRE_TEMPORAL_METRICS_PORT: '9466',
      }).metrics,
      { token, host: '0.0.0.0', webPort: 9464, workerPort: 9465, temporalPort: 9466 },
    );
    assertConfigError(
      () => loadConfig({ CADRE_METRICS_TOKEN: 'short-secret' }),
      'CADRE_METRICS_TOKEN',
      /16 characters/,
    );
    assert.throws(
      () => loadConfig({ CADRE_METRICS_TOKEN: 'short-secret' }),
      (err: Error) => !err.message.includes('short-secret'),
    );
    assertConfigError(() => loadConfig({ CADRE_METRICS_HOST: 'localhost' }), 'CADRE_METRICS_HOST', /IP address/);
    assertConfigError(() => loadConfig({ CADRE_WORKER_METRICS_PORT: '70000' }), 'CADRE_WORKER_METRICS_PORT');
  });

  it('asks for VOYAGE_API_KEY when Voyage AI embeddings are chosen', () => {
    assertConfigError(() => loadConfig({ CADRE_EMBEDDINGS: 'voyage' }), 'VOYAGE_API_KEY', /CADRE_EMBEDDINGS=voyage/);
    assert.doesNotThrow(() => loadConfig({ CADRE_EMBEDDINGS: 'voyage', VOYAGE_API_KEY: 'pa-test' }));
    assertConfigError(() => loadConfig({ CADRE_EMBEDDINGS: 'remote' }), 'CADRE_EMBEDDINGS');
  });

  it("asks for both halves of the Inbox listener's TLS", () => {
    assertConfigError(() => loadConfig({ CADRE_INBOX_TLS_KEY: '/k.pem' }), 'CADRE_INBOX_TLS_CERT', /both/);
    const c = loadConfig({
      CADRE_INBOX_TLS_KEY: '/k.pem',
      CADRE_INBOX_TLS_CERT: '/c.pem',
      CADRE_INBOX_SMTP_PORT: '2525',
    });
    assert.deepEqual(c.inbox.tls, { keyPath: '/k.pem', certPath: '/c.pem' });
    assert.equal(c.inbox.smtpPort, 2525);
  });

  it('treats an empty or blank DATABASE_URL as unset (embedded database)', () => {
    for (const value of ['', '   ']) {
      const c = loadConfig({ DATABASE_URL: value });
      assert.equal(c.db.url, undefined);
      assert.equal(c.db.embedded, true);
    }
  });

  it('applies overrides', () => {
    const c = loadConfig({
      CADRE_DATA_DIR: '/srv/cadre',
      CADRE_WEB_HOST: '0.0.0.0',
      CADRE_WEB_PORT: '8080',
      CADRE_PUBLIC_URL: ' https://cadre.example.com/ ',
      CADRE_DB_PORT: '6543',
      CADRE_LOG_LEVEL: 'debug',
      CADRE_API_BODY_LIMIT: '5mb',
      CADRE_API_RATE_LIMIT: '0',
      CADRE_HTTP_ALLOW_HOSTS: ' intranet.local, 10.0.0.5:8080 ,,',
      DATABASE_URL: 'postgres://u:p@db:5432/cadre',
      ANTHROPIC_API_KEY: 'sk-test',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999',
      ANTHROPIC_MODEL: 'claude-x',
      SMTP_URL: 'smtp://mail:25',
      SMTP_FROM: 'Bot <bot@example.com>',
      CADRE_TRACE_URL: 'https://jaeger.example.com/trace/{trace_id}',
    });
    assert.equal(c.dataDir, path.resolve('/srv/cadre'));
    assert.deepEqual(c.web, {
      host: '0.0.0.0',
      port: 8080,
      publicUrl: 'https://cadre.example.com',
      bodyLimit: '5mb',
      rateLimit: 0,
      traceUrl: 'https://jaeger.example.com/trace/{trace_id}',
    });
    assert.deepEqual(c.db, {
      url: 'postgres://u:p@db:5432/cadre',
      embedded: false,
      embeddedPort: 6543,
      embeddedDir: path.join(path.resolve('/srv/cadre'), 'pglite'),
    });
    assert.deepEqual(c.model, {
      apiKey: 'sk-test',
      baseUrl: 'http://127.0.0.1:9999',
      name: 'claude-x',
      unavailableRetries: 4,
      retrySeconds: 15,
    });
    assert.deepEqual(c.smtp, { url: 'smtp://mail:25', from: 'Bot <bot@example.com>' });
    assert.deepEqual(c.http.allowHosts, ['intranet.local', '10.0.0.5:8080']);
    assert.equal(c.logLevel, 'debug');
  });

  it('reads the stdio MCP servers the operator declares, as JSON or from a JSON file', () => {
    const files = { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/share'] };
    const inline = loadConfig({
      CADRE_MCP_STDIO_SERVERS: JSON.stringify({ files, git: { command: 'uvx', env: { GIT_DIR: '/srv/repo' } } }),
      CADRE_MCP_STDIO_USER: 'mcp-runner',
    });
    assert.deepEqual(inline.mcp.stdioServers, {
      files: { ...files, env: {} },
      git: { command: 'uvx', args: [], env: { GIT_DIR: '/srv/repo' } },
    });
    assert.equal(inline.mcp.stdioUser, 'mcp-runner');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-config-'));
    try {
      const file = path.join(dir, 'servers.json');
      fs.writeFileSync(file, JSON.stringify({ files: { ...files, description: 'The shared drive' } }));
      assert.deepEqual(loadConfig({ CADRE_MCP_STDIO_SERVERS: file }).mcp.stdioServers, {
        files: { ...files, env: {}, description: 'The shared drive' },
      });
      assertConfigError(
        () => loadConfig({ CADRE_MCP_STDIO_SERVERS: path.join(dir, 'missing.json') }),
        'CADRE_MCP_STDIO_SERVERS',
        /cannot read .*missing\.json \(ENOENT\)/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses CADRE_MCP_STDIO_COMMANDS, saying to declare servers instead, and malformed declarations', () => {
    assertConfigError(
      () => loadConfig({ CADRE_MCP_STDIO_COMMANDS: 'npx,uvx' }),
      'CADRE_MCP_STDIO_COMMANDS',
      /no longer read: .*CADRE_MCP_STDIO_SERVERS.*"transport": "stdio", "server": "files"/,
    );
    const servers = (value: unknown) => () =>
      loadConfig({ CADRE_MCP_STDIO_SERVERS: typeof value === 'string' ? value : JSON.stringify(value) });
    assertConfigError(servers('{"files": '), 'CADRE_MCP_STDIO_SERVERS', /valid JSON/);
    assertConfigError(servers({ files: { args: ['x'] } }), 'CADRE_MCP_STDIO_SERVERS', /server "files" command: /);
    assertConfigError(
      servers({ files: { command: 'npx', arg: ['-y'] } }),
      'CADRE_MCP_STDIO_SERVERS',
      /server "files": Unrecognized key: "arg"/,
    );
    assertConfigError(servers({ 'My Files': { command: 'npx' } }), 'CADRE_MCP_STDIO_SERVERS', /lower-case letters/);
    assertConfigError(
      servers({ files: { command: 'npx', env: { 'NOT A NAME': 'x' } } }),
      'CADRE_MCP_STDIO_SERVERS',
      /server "files" env\.NOT A NAME: an environment variable name/,
    );
    assertConfigError(() => loadConfig({ CADRE_MCP_STDIO_USER: 'root' }), 'CADRE_MCP_STDIO_USER', /not root/);
    assertConfigError(() => loadConfig({ CADRE_MCP_STDIO_USER: '0:0' }), 'CADRE_MCP_STDIO_USER', /not root/);
  });

  it('derives publicUrl from the web port when CADRE_PUBLIC_URL is unset', () => {
    assert.equal(loadConfig({ CADRE_WEB_PORT: '4000' }).web.publicUrl, 'http://localhost:4000');
  });

  it('rejects a non-numeric port with a one-line ConfigError naming the variable', () => {
    assertConfigError(() => loadConfig({ CADRE_WEB_PORT: 'abc' }), 'CADRE_WEB_PORT', /\(got "abc"\)$/);
  });

  it('rejects an out-of-range or fractional port', () => {
    assertConfigError(() => loadConfig({ CADRE_WEB_PORT: '70000' }), 'CADRE_WEB_PORT', /\(got "70000"\)$/);
    assertConfigError(() => loadConfig({ CADRE_DB_PORT: '0' }), 'CADRE_DB_PORT', /\(got "0"\)$/);
    assertConfigError(() => loadConfig({ CADRE_DB_PORT: '54.5' }), 'CADRE_DB_PORT');
  });

  it('rejects an unknown log level', () => {
    assertConfigError(() => loadConfig({ CADRE_LOG_LEVEL: 'loud' }), 'CADRE_LOG_LEVEL', /\(got "loud"\)$/);
  });

  it('keeps the error on one line even when the bad value has a newline', () => {
    assertConfigError(() => loadConfig({ CADRE_WEB_PORT: '80\n80' }), 'CADRE_WEB_PORT', /\(got "80\\n80"\)$/);
  });

  describe('databaseUrl', () => {
    it('points at the embedded server on the configured port, with a password generated once, when DATABASE_URL is unset', () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-config-'));
      try {
        const url = new URL(databaseUrl(loadConfig({ CADRE_DATA_DIR: dir })));
        assert.equal(`${url.hostname}:${url.port}${url.pathname}`, '127.0.0.1:5433/postgres');
        const password = decodeURIComponent(url.password);
        assert.ok(password.length >= 32 && password !== 'postgres', 'no well-known password');
        assert.equal(fs.readFileSync(path.join(dir, 'db.password'), 'utf8').trim(), password);
        assert.equal(fs.statSync(path.join(dir, 'db.password')).mode & 0o777, 0o600);
        const again = new URL(
          databaseUrl(loadConfig({ CADRE_DATA_DIR: dir, CADRE_DB_PORT: '6000', DATABASE_URL: '' })),
        );
        assert.equal(`${again.port}:${decodeURIComponent(again.password)}`, `6000:${password}`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('returns DATABASE_URL (trimmed) when set', () => {
      assert.equal(
        databaseUrl(loadConfig({ DATABASE_URL: ' postgres://u:p@db.example.com:5432/cadre ' })),
        'postgres://u:p@db.example.com:5432/cadre',
      );
    });
  });
});

describe('loadTemporalConfig', () => {
  it('has working defaults with an empty environment (embedded dev server)', () => {
    const t = loadTemporalConfig({});
    assert.deepEqual(t, {
      embedded: true,
      address: '127.0.0.1:7233',
      namespace: 'default',
      apiKey: undefined,
      tls: undefined,
      uiUrl: 'http://localhost:8233',
      embeddedPort: 7233,
      embeddedUiPort: 8233,
      taskQueue: 'cadre-runs',
      worker: {
        maxConcurrentActivityTaskExecutions: 100,
        maxConcurrentWorkflowTaskExecutions: 40,
        maxEagerActivityReservationsPerWorkflowTask: 100,
        debugMode: true,
        isolateExecutionTimeout: '5s',
      },
      timeouts: { db: '1 minute', tool: '2 minutes', llm: '10 minutes' },
      searchAttributes,
    });
  });

  it('treats an empty TEMPORAL_ADDRESS as unset', () => {
    const t = loadTemporalConfig({ TEMPORAL_ADDRESS: '', CADRE_TEMPORAL_PORT: '7300' });
    assert.equal(t.embedded, true);
    assert.equal(t.address, '127.0.0.1:7300');
  });

  it('uses TEMPORAL_ADDRESS and other overrides', () => {
    const t = loadTemporalConfig({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'prod',
      TEMPORAL_TASK_QUEUE: 'q',
      TEMPORAL_UI_URL: 'https://ui.example.com/',
      CADRE_TEMPORAL_UI_PORT: '9000',
      CADRE_WORKER_MAX_ACTIVITIES: '7',
      CADRE_WORKER_MAX_WORKFLOW_TASKS: '3',
      CADRE_WORKFLOW_THREAD: 'true',
    });
    assert.equal(t.embedded, false);
    assert.equal(t.address, 'temporal.internal:7233');
    assert.equal(t.namespace, 'prod');
    assert.equal(t.taskQueue, 'q');
    assert.equal(t.uiUrl, 'https://ui.example.com');
    assert.equal(t.embeddedUiPort, 9000);
    assert.deepEqual(t.worker, {
      maxConcurrentActivityTaskExecutions: 7,
      maxConcurrentWorkflowTaskExecutions: 3,
      maxEagerActivityReservationsPerWorkflowTask: 7,
    });
    assert.equal(t.tls, undefined);
  });

  it("runs workflows on the worker's main thread with the embedded Temporal, in the SDK's thread against a cluster; CADRE_WORKFLOW_THREAD overrides either, another value is refused", () => {
    assert.equal('debugMode' in loadTemporalConfig({ CADRE_WORKFLOW_THREAD: 'true' }).worker, false);
    assert.equal('debugMode' in loadTemporalConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233' }).worker, false);
    assert.equal(
      loadTemporalConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', CADRE_WORKFLOW_THREAD: 'false' }).worker
        .debugMode,
      true,
    );
    assert.throws(() => loadTemporalConfig({ CADRE_WORKFLOW_THREAD: 'yes' }), /CADRE_WORKFLOW_THREAD/);
  });

  it('turns TLS on for an API key', () => {
    const t = loadTemporalConfig({ TEMPORAL_ADDRESS: 'ns.tmprl.cloud:7233', TEMPORAL_API_KEY: 'key' });
    assert.equal(t.apiKey, 'key');
    assert.equal(t.tls, true);
  });

  it('reads a client certificate pair from files', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-tls-'));
    try {
      fs.writeFileSync(path.join(dir, 'c.pem'), 'CERT');
      fs.writeFileSync(path.join(dir, 'k.pem'), 'KEY');
      const t = loadTemporalConfig({
        TEMPORAL_ADDRESS: 'x:7233',
        TEMPORAL_TLS_CERT: path.join(dir, 'c.pem'),
        TEMPORAL_TLS_KEY: path.join(dir, 'k.pem'),
      });
      assert.ok(t.tls && typeof t.tls === 'object');
      assert.equal(t.tls.clientCertPair.crt.toString(), 'CERT');
      assert.equal(t.tls.clientCertPair.key.toString(), 'KEY');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a CADRE_TRACE_URL without {trace_id} or not http(s)', () => {
    for (const value of ['https://jaeger.example.com/trace/', 'javascript:alert({trace_id})'])
      assertConfigError(() => loadConfig({ CADRE_TRACE_URL: value }), 'CADRE_TRACE_URL');
  });

  it('rejects bad ports and worker sizes with a one-line ConfigError', () => {
    assertConfigError(
      () => loadTemporalConfig({ CADRE_TEMPORAL_PORT: 'abc' }),
      'CADRE_TEMPORAL_PORT',
      /\(got "abc"\)$/,
    );
    assertConfigError(() => loadTemporalConfig({ CADRE_TEMPORAL_UI_PORT: '70000' }), 'CADRE_TEMPORAL_UI_PORT');
    assertConfigError(() => loadTemporalConfig({ CADRE_WORKER_MAX_ACTIVITIES: '0' }), 'CADRE_WORKER_MAX_ACTIVITIES');
  });
});
