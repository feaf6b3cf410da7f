// Serving a metrics registry in Prometheus's text format: as a route of the web's own server, or on a listener of
// its own (the web's CADRE_METRICS_PORT, each worker's CADRE_WORKER_METRICS_PORT). Plain node:http, so the worker
// needs no Express; a refusal is problem details like the API's.
import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Registry } from 'prom-client';
import { metricsRegistry } from './metrics';

const problem = (res: http.ServerResponse, status: number, code: string, detail: string, title: string) => {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/problem+json');
  res.end(JSON.stringify({ type: `https://cadre.dev/problems/${code}`, title, status, code, detail }));
};

/** The bearer token as sent, compared in constant time. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const sent = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  if (sent === undefined) return false;
  const [a, b] = [Buffer.from(sent), Buffer.from(token)];
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Answers a scrape: the registry's exposition, or 401 when `token` is set and the request does not carry it as
 * `Authorization: Bearer <token>` (Prometheus's scrape_config `authorization.credentials`).
 */
export function metricsHandler(opts: { token?: string; registry?: Registry }) {
  const registry = opts.registry ?? metricsRegistry;
  return (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (opts.token !== undefined && !bearerMatches(req.headers.authorization, opts.token)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
      return problem(
        res,
        401,
        'metrics_unauthorized',
        'send the metrics token as Authorization: Bearer <token>',
        'Unauthorized',
      );
    }
    registry.metrics().then(
      (text) => {
        res.setHeader('Content-Type', registry.contentType);
        res.end(text);
      },
      (err: Error) =>
        problem(
          res,
          500,
          'metrics_failed',
          `the metrics could not be collected: ${err.message}`,
          'Internal Server Error',
        ),
    );
  };
}

/** A listener of its own answering GET /metrics (anything else is 404). Resolves once it listens. */
export async function startMetricsServer(opts: {
  host: string;
  port: number;
  token?: string;
  registry?: Registry;
}): Promise<http.Server> {
  const answer = metricsHandler(opts);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return problem(res, 404, 'not_found', 'metrics are served at /metrics', 'Not Found');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return problem(res, 405, 'method_not_allowed', 'GET /metrics', 'Method Not Allowed');
    }
    answer(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return server;
}
