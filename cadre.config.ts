// The one typed configuration of Cadre, read from the environment with working defaults so that
// `npm start` needs no configuration at all. Temporal-specific settings live in temporal.config.ts.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { secretFromFile } from './db/secret-box';

export const envPort = z.coerce.number().int().min(1).max(65535);
export const envOptionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
const list = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );

/** Every environment variable Cadre reads (Temporal's are in temporal.config.ts). */
export const cadreEnvSchema = z.object({
  CADRE_DATA_DIR: z.string().default('./data'),
  CADRE_WEB_HOST: z.string().default('127.0.0.1'),
  CADRE_WEB_PORT: envPort.default(3000),
  CADRE_PUBLIC_URL: envOptionalString,
  CADRE_DB_PORT: envPort.default(5433),
  CADRE_LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** How `npm start` prints its processes' logs: short lines a person reads, or their JSON unchanged. */
  CADRE_LOG_FORMAT: z.enum(['readable', 'json']).default('readable'),
  CADRE_API_BODY_LIMIT: z.string().default('1mb'),
  /** Requests a second per API key, on average (bursts of ten seconds' worth); over it → 429. 0 turns it off. */
  CADRE_API_RATE_LIMIT: z.coerce.number().int().min(0).default(100),
  CADRE_HTTP_ALLOW_HOSTS: list,
  /** Removed (a tenant chose the arguments of an allowed command): set, the configuration fails, saying what to do. */
  CADRE_MCP_STDIO_COMMANDS: envOptionalString,
  /**
   * The MCP servers stdio connections may start, by name (mcpStdioServersSchema): a JSON object, or the path of a JSON
   * file holding one. Unset → none: connections pick a server by name and never name a command.
   */
  CADRE_MCP_STDIO_SERVERS: envOptionalString,
  /** Whom those servers run as when the process runs as root: a user name, or uid[:gid]. Never root. */
  CADRE_MCP_STDIO_USER: z
    .string()
    .trim()
    .regex(/^(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?|\d+(?::\d+)?)$/, 'a user name such as nobody, or uid[:gid]')
    .refine((u) => u !== 'root' && !/^0(?::|$)/.test(u), 'not root: MCP servers run unprivileged')
    .default('nobody'),
  /**
   * Roots of the files DuckDB warehouse connections read: a workspace's read only <root>/<workspace id>/ (made on
   * first use); unset → <data dir>/warehouse.
   */
  CADRE_WAREHOUSE_DIRS: list,
  /** Encrypts stored secrets (webhook signing secrets). Unset → a key generated once in the data directory. */
  CADRE_SECRET_KEY: envOptionalString,
  /** After rotating CADRE_SECRET_KEY: the former keys, comma-separated, until `npx cadre secrets rewrap` has run. */
  CADRE_SECRET_KEY_PREVIOUS: list,
  DATABASE_URL: envOptionalString,
  ANTHROPIC_API_KEY: envOptionalString,
  ANTHROPIC_BASE_URL: envOptionalString,
  ANTHROPIC_MODEL: z.string().default('claude-sonnet-4-6'),
  /** When the model API stays unavailable (429, 5xx, overloaded) after the SDK's own retries, a step tries again
   * this many more times, apart from the agent's item retries, waiting ANTHROPIC_RETRY_SECONDS, doubling. */
  ANTHROPIC_UNAVAILABLE_RETRIES: z.coerce.number().int().min(0).max(20).default(4),
  ANTHROPIC_RETRY_SECONDS: z.coerce.number().min(0.1).max(600).default(15),
  SMTP_URL: envOptionalString,
  SMTP_FROM: z.string().default('Cadre <cadre@localhost>'),
  /** The Inbox's own SMTP listener (mail for the agents' addresses); unset → no listener. */
  CADRE_INBOX_SMTP_PORT: envPort.optional(),
  CADRE_INBOX_SMTP_HOST: z.string().default('127.0.0.1'),
  /** Each agent's address is <agent>@CADRE_INBOX_DOMAIN. */
  CADRE_INBOX_DOMAIN: z
    .string()
    .regex(/^[A-Za-z0-9.-]+$/, 'a mail domain such as agents.example.com')
    .default('localhost'),
  /** Larger messages are refused with 552. */
  CADRE_INBOX_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(25 * 1024 * 1024),
  /** PEM files for STARTTLS on the listener; both or neither. */
  CADRE_INBOX_TLS_KEY: envOptionalString,
  CADRE_INBOX_TLS_CERT: envOptionalString,
  /** Vector retrieval with the local embedding model (`local`), Voyage AI's API (`voyage`, needs VOYAGE_API_KEY),
   * or full-text retrieval only (`off`). Passages are embedded by the provider in force when they are indexed. */
  CADRE_EMBEDDINGS: z.enum(['local', 'voyage', 'off']).default('local'),
  VOYAGE_API_KEY: envOptionalString,
  VOYAGE_MODEL: z.string().default('voyage-3.5'),
  VOYAGE_BASE_URL: z.url().default('https://api.voyageai.com/v1'),
  /** How long a deleted account can be recovered before it is erased for good (spec §8: 30 days). */
  CADRE_ACCOUNT_RECOVERY_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(30 * 86_400),
  /**
   * Prometheus metrics (off by default). Set → every Cadre /metrics endpoint requires it as `Authorization: Bearer`,
   * and the web serves GET /metrics on its own port too.
   */
  CADRE_METRICS_TOKEN: envOptionalString.refine(
    (v) => v === undefined || v.length >= 16,
    'at least 16 characters (e.g. the output of `openssl rand -hex 24`)',
  ),
  /**
   * The IP address the metrics listeners below bind: loopback by default, so only this machine can scrape them
   * (an address, not a name: the Temporal SDK's exporter takes no names).
   */
  CADRE_METRICS_HOST: z
    .union([z.ipv4(), z.ipv6()], { error: 'an IP address such as 127.0.0.1 or 0.0.0.0' })
    .default('127.0.0.1'),
  /** The web's /metrics on a listener of its own (with the token if one is set); unset → none. */
  CADRE_METRICS_PORT: envPort.optional(),
  /** A worker's Cadre metrics (runs, items, steps, tokens, connector calls) at /metrics; unset → none. */
  CADRE_WORKER_METRICS_PORT: envPort.optional(),
  /** A worker's Temporal SDK metrics (slots, schedule-to-start latency, polls) at /metrics; unset → none. */
  CADRE_TEMPORAL_METRICS_PORT: envPort.optional(),
  /**
   * The tracing backend's page of a trace, with `{trace_id}` where its id goes (Jaeger:
   * http://jaeger:16686/trace/{trace_id}): run details link a run to its trace. Tracing itself is OTEL_* (README).
   */
  CADRE_TRACE_URL: envOptionalString.refine(
    (v) => v === undefined || (v.includes('{trace_id}') && /^https?:\/\//.test(v)),
    'an http(s) URL with {trace_id} where the trace id goes',
  ),
  /** Threads of the OCR pool in each worker; unset → the machine's cores less one (at most 4). */
  CADRE_OCR_WORKERS: z.coerce.number().int().positive().optional(),
});

/** A name connections pick a server by, like connections' own names. */
export const mcpStdioServerName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,59}$/, 'lower-case letters, digits, - and _, starting with a letter (at most 60)');

/**
 * The stdio MCP servers the operator declares (CADRE_MCP_STDIO_SERVERS), by name: what runs, with which arguments and
 * which environment. A connection names one; nothing a tenant sets reaches the command line or the environment.
 */
export const mcpStdioServersSchema = z.record(
  mcpStdioServerName,
  z.strictObject({
    command: z.string().min(1).max(1000),
    args: z.array(z.string().max(10_000)).max(200).default([]),
    /** Added to PATH, HOME and TMPDIR (its own directory), and the only other variables it gets. */
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.string().max(100_000))
      .default({}),
    /** Shown with the name where a workspace admin picks a server. */
    description: z.string().max(300).optional(),
  }),
);
export type McpStdioServers = z.infer<typeof mcpStdioServersSchema>;

export class ConfigError extends Error {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

/** Parses an environment with a zod schema, turning the first problem into one actionable line. */
export function parseEnv<T extends z.ZodTypeAny>(schema: T, env: NodeJS.ProcessEnv): z.infer<T> {
  // `VAR=` in a shell or an .env file means "not set": fall back to the default rather than to ''.
  const set = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ''));
  const parsed = schema.safeParse(set);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = String(issue.path[0] ?? 'environment');
    // A refused secret is not repeated into the logs.
    const got = /TOKEN|KEY|SECRET|PASSWORD/.test(variable) ? 'a refused value' : JSON.stringify(env[variable]);
    throw new ConfigError(variable, `${issue.message} (got ${got})`);
  }
  return parsed.data;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  const e = parseEnv(cadreEnvSchema, env);
  if (e.CADRE_EMBEDDINGS === 'voyage' && !e.VOYAGE_API_KEY)
    throw new ConfigError('VOYAGE_API_KEY', 'is required with CADRE_EMBEDDINGS=voyage (a key from dash.voyageai.com)');
  if ((e.CADRE_INBOX_TLS_KEY === undefined) !== (e.CADRE_INBOX_TLS_CERT === undefined))
    throw new ConfigError(
      e.CADRE_INBOX_TLS_KEY ? 'CADRE_INBOX_TLS_CERT' : 'CADRE_INBOX_TLS_KEY',
      'TLS for the Inbox listener needs both CADRE_INBOX_TLS_KEY and CADRE_INBOX_TLS_CERT (PEM file paths)',
    );
  if (e.CADRE_MCP_STDIO_COMMANDS !== undefined)
    throw new ConfigError(
      'CADRE_MCP_STDIO_COMMANDS',
      'is no longer read: it let a workspace choose the arguments of an allowed command. Declare each stdio MCP server ' +
        'by name in CADRE_MCP_STDIO_SERVERS instead (JSON or the path of a JSON file, e.g. ' +
        '{"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/share"]}}), ' +
        'connect with {"transport": "stdio", "server": "files"}, and unset CADRE_MCP_STDIO_COMMANDS',
    );
  const dataDir = path.resolve(e.CADRE_DATA_DIR);
  return {
    dataDir,
    web: {
      host: e.CADRE_WEB_HOST,
      port: e.CADRE_WEB_PORT,
      publicUrl: (e.CADRE_PUBLIC_URL ?? `http://localhost:${e.CADRE_WEB_PORT}`).replace(/\/$/, ''),
      bodyLimit: e.CADRE_API_BODY_LIMIT,
      rateLimit: e.CADRE_API_RATE_LIMIT,
      traceUrl: e.CADRE_TRACE_URL,
    },
    db: {
      /** Set → that Postgres; unset → the embedded PGlite served on 127.0.0.1:embeddedPort. */
      url: e.DATABASE_URL,
      embedded: e.DATABASE_URL === undefined,
      embeddedPort: e.CADRE_DB_PORT,
      embeddedDir: path.join(dataDir, 'pglite'),
    },
    model: {
      apiKey: e.ANTHROPIC_API_KEY,
      baseUrl: e.ANTHROPIC_BASE_URL,
      name: e.ANTHROPIC_MODEL,
      unavailableRetries: e.ANTHROPIC_UNAVAILABLE_RETRIES,
      retrySeconds: e.ANTHROPIC_RETRY_SECONDS,
    },
    smtp: { url: e.SMTP_URL, from: e.SMTP_FROM },
    inbox: {
      smtpPort: e.CADRE_INBOX_SMTP_PORT,
      smtpHost: e.CADRE_INBOX_SMTP_HOST,
      domain: e.CADRE_INBOX_DOMAIN.toLowerCase(),
      maxBytes: e.CADRE_INBOX_MAX_BYTES,
      tls: e.CADRE_INBOX_TLS_KEY ? { keyPath: e.CADRE_INBOX_TLS_KEY, certPath: e.CADRE_INBOX_TLS_CERT! } : undefined,
    },
    http: { allowHosts: e.CADRE_HTTP_ALLOW_HOSTS },
    mcp: {
      stdioServers: mcpStdioServersOf(e.CADRE_MCP_STDIO_SERVERS),
      stdioUser: e.CADRE_MCP_STDIO_USER,
      /** Each started server gets a fresh directory of its own under here (its working directory, HOME and TMPDIR). */
      stdioDir: path.join(dataDir, 'tmp', 'mcp'),
    },
    warehouse: {
      dirs: e.CADRE_WAREHOUSE_DIRS.length > 0 ? e.CADRE_WAREHOUSE_DIRS : [path.join(dataDir, 'warehouse')],
    },
    secretKey: e.CADRE_SECRET_KEY,
    previousSecretKeys: e.CADRE_SECRET_KEY_PREVIOUS,
    accountRecoverySeconds: e.CADRE_ACCOUNT_RECOVERY_SECONDS,
    logLevel: e.CADRE_LOG_LEVEL,
    logFormat: e.CADRE_LOG_FORMAT,
    metrics: {
      token: e.CADRE_METRICS_TOKEN,
      host: e.CADRE_METRICS_HOST,
      webPort: e.CADRE_METRICS_PORT,
      workerPort: e.CADRE_WORKER_METRICS_PORT,
      temporalPort: e.CADRE_TEMPORAL_METRICS_PORT,
    },
  };
}

/** CADRE_MCP_STDIO_SERVERS: JSON when it starts with `{`, else the path of a JSON file. */
function mcpStdioServersOf(value: string | undefined): McpStdioServers {
  const variable = 'CADRE_MCP_STDIO_SERVERS';
  if (value === undefined) return {};
  let text = value;
  const inline = value.startsWith('{');
  if (!inline) {
    try {
      text = fs.readFileSync(path.resolve(value), 'utf8');
    } catch (err) {
      throw new ConfigError(
        variable,
        `cannot read ${path.resolve(value)} (${(err as NodeJS.ErrnoException).code ?? String(err)}): give a JSON ` +
          'object such as {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}}, ' +
          'or the path of a file holding one',
      );
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      variable,
      `${inline ? 'is not' : `${path.resolve(value)} does not hold`} valid JSON (${(err as Error).message})`,
    );
  }
  const parsed = mcpStdioServersSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const [server, ...rest] = issue.path.map(String);
    const where = server === undefined ? '' : `server "${server}"${rest.length ? ` ${rest.join('.')}` : ''}: `;
    // A refused name (of a server, of a variable) says what a name may be, not only that it is refused.
    const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    throw new ConfigError(
      variable,
      `${where}${message} (each server is {"command": "…", "args": ["…"], "env": {"NAME": "value"}, ` +
        '"description": "…"}, by a name of lower-case letters, digits, - and _)',
    );
  }
  return parsed.data;
}

export type CadreConfig = ReturnType<typeof loadConfig>;

/** The connection string every process uses: one code path (pg) for embedded and external Postgres. */
export function databaseUrl(config: CadreConfig): string {
  return (
    config.db.url ??
    `postgres://postgres:${encodeURIComponent(embeddedDbPassword(config))}@127.0.0.1:${config.db.embeddedPort}/postgres`
  );
}

/**
 * The embedded database's password: generated at the first start and kept in the data directory (db.password,
 * mode 0600), so no well-known password opens every tenant's data to a local connection.
 */
export const embeddedDbPassword = (config: Pick<CadreConfig, 'dataDir'>) =>
  secretFromFile(path.join(config.dataDir, 'db.password'));
