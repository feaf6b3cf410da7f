// api/ (DESIGN.md "Top-level layout"): HTTP only. Express app, auth, validation, problem details, thin routes
// (routes/) that call services/, the OpenAPI document and its generated client (client/). The use cases (runs,
// triggers, chat, wizard, inbox, approvals) live in services/. Nothing here imports activities/: what the API reaches
// through the worker's code (connection checks, OAuth providers, source search, page pictures, mail) comes in as
// `adapters` (services/adapters.ts), built by the composition root (scripts/api-adapters.ts).
//
// The web process's Express app: /v1 API, health checks, then the SvelteKit console (mounted last).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import express, { type RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import { authenticate } from './auth';
import { redactUrl, type Logger } from './logger';
import { answerClientError, ApiError, problemHandler } from './problem';
import { openApiDocument } from './openapi';
import { allowedMethods } from './allowed-methods';
import { agentRoutes, type RouteDeps } from './routes/agents';
import { runRoutes } from './routes/runs';
import { retryRoutes } from './routes/retries';
import { testRunRoutes } from './routes/test-runs';
import { reviewRoutes } from './routes/reviews';
import { apiKeyRoutes } from './routes/api-keys';
import { hookRoutes } from './routes/hooks';
import { triggerRoutes } from './routes/triggers';
import { toolRoutes } from './routes/tools';
import { publicRunRoutes, runLinkRoutes } from './routes/run-links';
import { sourceRoutes } from './routes/sources';
import { connectionRoutes } from './routes/connections';
import { connectionOAuthPublicRoutes } from './routes/connection-oauth';
import type { ConnectorLimits } from '../model/connection';
import type { Adapters } from '../services/adapters';
import { skillRoutes } from './routes/skills';
import { inboxRoutes } from './routes/inbox';
import { accountRoutes } from './routes/accounts';
import { memberRoutes } from './routes/members';
import { ssoConfigRoutes, ssoPublicRoutes } from './routes/sso';
import { wizardRoutes } from './routes/wizard';
import type { ModelSettings } from '../services/wizard/model-client';
import type { SmtpSettings } from './account-mail';
import type { SecretBox } from '../db/secret-box';
import { chatRoutes } from './routes/chat';
import { readinessDetail, type Readiness } from './readiness';
import { metricsHandler } from '../services/telemetry/metrics-http';

export interface AppDeps extends RouteDeps {
  secrets: SecretBox;
  /** What the API reaches through the worker's code, built by the composition root (scripts/api-adapters.ts). */
  adapters: Adapters;
  /** Sends password resets and invitations; unset → links are shown or printed instead. */
  smtp?: SmtpSettings;
  /** How long a deleted account can be recovered (CADRE_ACCOUNT_RECOVERY_SECONDS). */
  accountRecoverySeconds?: number;
  logger: Logger;
  /** Versions reached at start, named by /healthz. */
  versions: { temporal: string; postgres: string };
  /** Live checks for /readyz (api/readiness.ts): the database and Temporal answer, a worker polls. */
  ready: () => Promise<Readiness>;
  console?: RequestHandler;
  /** Requests a second per API key (CADRE_API_RATE_LIMIT); unset or 0 → no limit. */
  apiRateLimit?: number;
  /** What a connection may reach (CADRE_HTTP_ALLOW_HOSTS) and start (CADRE_MCP_STDIO_SERVERS); unset → neither. */
  connectors?: ConnectorLimits;
  /** The domain of the agents' Inbox addresses (CADRE_INBOX_DOMAIN); unset → localhost. */
  inboxDomain?: string;
  /**
   * The model the creation wizard generates with and Chat Mode's assistant uses (cadre.config.ts `model`); without
   * an API key the wizard offers examples instead and Chat Mode says how to set it.
   */
  model?: ModelSettings;
  /** Set (CADRE_METRICS_TOKEN) → GET /metrics answers Prometheus with this process's metrics, for that bearer token. */
  metricsToken?: string;
}

export function createApp(deps: AppDeps) {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req, res) => {
        const id =
          typeof req.headers['x-request-id'] === 'string' && /^[\w-]{1,100}$/.test(req.headers['x-request-id'])
            ? req.headers['x-request-id']
            : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      autoLogging: { ignore: (req) => ['/healthz', '/readyz', '/metrics'].includes(req.url ?? '') },
      serializers: {
        // Tokens in links are as secret as keys: the logged request keeps its path shape, not the token.
        req: (req: { url?: string; query?: unknown; params?: unknown }) => ({
          ...req,
          url: redactUrl(req.url),
          query: undefined,
          params: undefined,
        }),
      },
    }),
  );

  // Nothing this process answers is to be sniffed into another type than the one it says (a run's file, a
  // public run page). A Run Mode page's path is its token: it is not sent on as a Referer to other sites
  // (same-origin, not no-referrer: with no-referrer the browser sends `Origin: null` with the page's own form posts,
  // which SvelteKit refuses as cross-site).
  app.use((req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (req.path.startsWith('/r/')) res.setHeader('Referrer-Policy', 'same-origin');
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({
      status: 'ok',
      temporal: { server_version: deps.versions.temporal },
      postgres: { version: deps.versions.postgres },
    });
  });
  app.get('/readyz', async (_req, res) => {
    const checks = await deps.ready();
    const detail = readinessDetail(checks, deps.temporalConfig.taskQueue);
    res
      .status(detail ? 503 : 200)
      .json({ status: detail ? 'unavailable' : 'ready', checks, ...(detail && { detail }) });
  });

  // Outside /v1 like the health checks: an operator's endpoint, not part of the API a workspace's key reaches.
  if (deps.metricsToken) app.get('/metrics', metricsHandler({ token: deps.metricsToken }));

  const openapi = openApiDocument(deps.links.publicUrl);
  app.get('/v1/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  app.use('/v1', allowedMethods(openapi));

  // Webhooks and forms come from outside the workspace: a signature or a public form stands in for a key.
  app.use('/v1', hookRoutes(deps));
  app.use('/v1', publicRunRoutes(deps));
  // People's own routes (sign-in, their account, accepting an invitation) work without a workspace.
  app.use('/v1', accountRoutes(deps));
  app.use('/v1', ssoPublicRoutes(deps));
  // The browser comes back from an OAuth 2.0 provider with the state it was given, not a key.
  app.use('/v1', connectionOAuthPublicRoutes({ ...deps, connectors: deps.connectors ?? { allowHosts: [] } }));

  const v1 = express.Router();
  v1.use(authenticate(deps.knex, deps.apiRateLimit, deps.budgetScope));
  v1.use(agentRoutes(deps));
  v1.use(runRoutes(deps));
  v1.use(retryRoutes(deps));
  v1.use(testRunRoutes(deps));
  v1.use(reviewRoutes(deps));
  v1.use(apiKeyRoutes(deps));
  v1.use(triggerRoutes(deps));
  v1.use(toolRoutes());
  v1.use(runLinkRoutes(deps));
  v1.use(sourceRoutes(deps));
  v1.use(connectionRoutes({ ...deps, connectors: deps.connectors ?? { allowHosts: [] } }));
  v1.use(skillRoutes(deps));
  v1.use(inboxRoutes(deps));
  v1.use(memberRoutes(deps));
  v1.use(ssoConfigRoutes(deps));
  v1.use(wizardRoutes(deps));
  v1.use(chatRoutes(deps));
  app.use('/v1', v1);
  app.use('/v1', () => {
    throw new ApiError(404, 'not_found', 'no such API route');
  });
  if (deps.console) app.use(deps.console);
  app.use(problemHandler);
  return app;
}

/**
 * How large a request's headers may be: Node's default, set here so that no NODE_OPTIONS flag changes it. Larger
 * ones are refused by the server (431) before the app sees them; a single header the app reads has its own, far
 * smaller limit (an Idempotency-Key, say).
 */
export const maxHeaderBytes = 16 * 1024;

/** The HTTP server for the app (scripts/web.ts, the tests): the header limit, and problem details for what it refuses. */
export function createServer(app: http.RequestListener): http.Server {
  return http.createServer({ maxHeaderSize: maxHeaderBytes }, app).on('clientError', answerClientError);
}
