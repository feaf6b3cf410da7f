// A proxy in front of localstripe that records what the Stripe client sent, and adds the two behaviours of Stripe's
// API the suites need that localstripe lacks: idempotency keys (Stripe answers a repeated POST with the same
// Idempotency-Key with the first answer, and refuses it with other parameters) and rate limiting (429 with
// Retry-After). It can also lose the answer to a request after the server acted on it, as a dropped connection does.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  idempotencyKey?: string;
  /** What the client got: the server's status, a replay's, a 429, or "lost". */
  answer: number | 'lost';
  replayed: boolean;
}

export interface StripeProxy {
  url: string;
  requests: RecordedRequest[];
  /** The answers to the next `count` requests matching are lost after the server (or the replay) produced them. */
  loseAnswers(method: string, path: string, count: number): void;
  /** The next `count` requests are refused with 429 and a Retry-After of `seconds`. */
  throttle(count: number, seconds: number): void;
  close(): Promise<void>;
}

interface Stored {
  fingerprint: string;
  status: number;
  body: Buffer;
}

export async function startStripeProxy(upstream: string): Promise<StripeProxy> {
  const requests: RecordedRequest[] = [];
  const stored = new Map<string, Stored>();
  const losses: { method: string; path: string; count: number }[] = [];
  let throttled = { count: 0, seconds: 1 };
  const target = new URL(upstream);

  const forward = (req: http.IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const out = http.request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: target.host },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 502, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      out.on('error', reject);
      out.end(body);
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? 'GET';
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const key = req.headers['idempotency-key'] as string | undefined;
      const record: RecordedRequest = { method, path, idempotencyKey: key, answer: 0, replayed: false };
      requests.push(record);
      const send = (status: number, payload: Buffer, headers: Record<string, string> = {}) => {
        const loss = losses.find((l) => l.count > 0 && l.method === method && l.path === path);
        if (loss) {
          loss.count--;
          record.answer = 'lost';
          req.socket.destroy();
          return;
        }
        record.answer = status;
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(payload);
      };

      if (throttled.count > 0) {
        throttled.count--;
        const error = { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' } };
        return send(429, Buffer.from(JSON.stringify(error)), { 'retry-after': String(throttled.seconds) });
      }
      const fingerprint = `${method} ${path} ${body.toString()}`;
      const previous = method === 'POST' && key ? stored.get(key) : undefined;
      if (previous) {
        record.replayed = true;
        if (previous.fingerprint !== fingerprint) {
          const error = {
            error: {
              type: 'idempotency_error',
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with.`,
            },
          };
          return send(400, Buffer.from(JSON.stringify(error)));
        }
        return send(previous.status, previous.body, { 'idempotent-replayed': 'true' });
      }
      try {
        const answer = await forward(req, body);
        if (method === 'POST' && key) stored.set(key, { fingerprint, ...answer });
        send(answer.status, answer.body);
      } catch (err) {
        send(502, Buffer.from(JSON.stringify({ error: { type: 'api_error', message: (err as Error).message } })));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    loseAnswers: (method, path, count) => void losses.push({ method, path, count }),
    throttle: (count, seconds) => void (throttled = { count, seconds }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
