// The web process: API + console in one Express server. Runs the database migrations at start. `npm start` runs it
// in one process with the worker (scripts/embedded-node.ts) through startWeb.
import '../services/telemetry/tracing-start'; // first: it instruments http, express and pg as they load
import fs from 'node:fs';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { loadConfig } from '../cadre.config';
import { loadTemporalConfig } from '../temporal.config';
import { createApp, createServer } from '../api/app';
import { consoleWithAssets } from '../api/console-assets';
import { apiAdapters } from './api-adapters';
import { createLogger } from '../api/logger';
import { loadSecretBox } from '../db/secret-box';
import { reconcileSchedules } from '../schedules/sync';
import { connectDatabase, connectTemporal } from './connections';
import { main } from './fail-fast';
import { repoRoot } from '../repo-root';
import { connectorLimitsOf } from '../activities/connectors/opened';
import { startInboxListener } from '../services/inbox/smtp-listener';
import { startRunSweeper } from '../services/runs/dispatch';
import { readinessChecks } from '../api/readiness';
import { shutdownTracing } from '../services/telemetry/tracing';
import { countRunsAwaitingStart } from '../db/open-run';
import { countRunStartBacklog } from '../services/telemetry/metrics';
import { startMetricsServer } from '../services/telemetry/metrics-http';

const consoleBuild = path.join(repoRoot, 'ui/build/handler.js');

export interface RunningWeb {
  /** Stops serving, waits for the start sweep, and closes the connections (does not exit). */
  stop(): Promise<void>;
}

export async function startWeb(): Promise<RunningWeb> {
  const config = loadConfig();
  const tc = loadTemporalConfig();
  const logger = createLogger(config.logLevel, 'web');
  const db = await connectDatabase(config, { migrate: true });
  const temporal = await connectTemporal(tc);
  // Schedules live in Temporal, triggers in the database: make the first match the second before serving.
  const reconciled = await reconcileSchedules({ knex: db.knex, temporal: temporal.client, temporalConfig: tc });
  logger.info(reconciled, 'schedules reconciled with the database');

  let consoleHandler: RequestHandler | undefined;
  if (fs.existsSync(consoleBuild)) {
    consoleHandler = await loadConsole(db.knex, config.web.port);
  } else {
    logger.warn('the console is not built (ui/build is missing): run "npm run build:ui"; the API works without it');
  }

  const app = createApp({
    adapters: apiAdapters(),
    knex: db.knex,
    temporal: temporal.client,
    temporalConfig: tc,
    links: { publicUrl: config.web.publicUrl, temporal: tc, traceUrl: config.web.traceUrl },
    bodyLimit: config.web.bodyLimit,
    apiRateLimit: config.web.rateLimit,
    secrets: loadSecretBox(config),
    connectors: connectorLimitsOf(config),
    smtp: config.smtp,
    inboxDomain: config.inbox.domain,
    model: config.model,
    accountRecoverySeconds: config.accountRecoverySeconds,
    logger,
    versions: { temporal: temporal.version, postgres: db.version },
    console: consoleHandler,
    ready: readinessChecks({ knex: db.knex, temporal: temporal.client, taskQueue: tc.taskQueue }),
    metricsToken: config.metrics.token,
  });
  const server = createServer(app).listen(config.web.port, config.web.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  logger.info({ url: config.web.publicUrl }, 'web listening');

  // Runs are answered before their workflow starts (services/runs/dispatch.ts): a start that never landed (this or another
  // web process died, Temporal was down) is sent again. Ten seconds is far longer than a start takes.
  const sweepAgeSeconds = 10;
  const sweeper = startRunSweeper(
    { knex: db.knex, temporal: temporal.client, temporalConfig: tc },
    { intervalMs: 5_000, olderThanSeconds: sweepAgeSeconds, logger },
  );
  countRunStartBacklog(() => countRunsAwaitingStart(db.knex, sweepAgeSeconds));
  const { metrics } = config;
  const metricsServer =
    metrics.webPort === undefined
      ? undefined
      : await startMetricsServer({ host: metrics.host, port: metrics.webPort, token: metrics.token });
  if (metricsServer) logger.info({ host: metrics.host, port: metrics.webPort }, 'metrics listening at /metrics');

  const { smtpPort } = config.inbox;
  const inbox =
    smtpPort === undefined
      ? undefined
      : await startInboxListener(
          { knex: db.knex, temporal: temporal.client, temporalConfig: tc, logger },
          { ...config.inbox, smtpPort },
        );
  if (inbox) logger.info({ port: inbox.port, domain: config.inbox.domain }, 'inbox listening for mail');

  return {
    async stop() {
      void inbox?.close();
      metricsServer?.close();
      server.close();
      server.closeAllConnections();
      await sweeper.stop();
      await Promise.allSettled([db.knex.destroy(), temporal.connection.close(), shutdownTracing()]);
    },
  };
}

if (require.main === module) {
  main('web', async () => {
    const web = await startWeb();
    const stop = () => void web.stop().then(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

/**
 * The console reads through the API like any client (DESIGN.md convention 10), as the person signed in to it:
 * their session cookie goes along with each call. Keys of the console's key mode from before accounts are revoked.
 */
async function loadConsole(knex: import('knex').Knex, port: number): Promise<RequestHandler | undefined> {
  await knex('api_keys')
    .where({ name: 'console (internal)' })
    .whereNull('revoked_at')
    .update({ revoked_at: knex.fn.now() });
  process.env.CADRE_INTERNAL_API_URL = `http://127.0.0.1:${port}`;
  // adapter-node refuses request bodies over 512 kB by default; source uploads through the console carry
  // documents of up to 50 MB each (the API enforces the per-file limits with clear messages).
  process.env.BODY_SIZE_LIMIT ??= '256M';
  const mod = await import(consoleBuild);
  // Its built files served by us first: a rebuild while this process runs must not crash it (api/console-assets.ts).
  return consoleWithAssets(path.join(path.dirname(consoleBuild), 'client'), mod.handler as RequestHandler);
}
