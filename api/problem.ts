// Errors as RFC 9457 problem details, each with a stable machine-readable `code`.
import type { Duplex } from 'node:stream';
import type { ErrorRequestHandler, Response } from 'express';
import { CursorError } from '../db/runs';
// A service's refusal (services/errors.ts), answered here as a problem.
import { ApiError } from '../services/errors';

export { ApiError };

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

const problemBody = (err: ApiError) => ({
  type: `https://cadre.dev/problems/${err.code}`,
  title: titles[err.status] ?? 'Error',
  status: err.status,
  code: err.code,
  detail: err.message,
  ...err.extra,
});

export function sendProblem(res: Response, err: ApiError): void {
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res.status(err.status).type('application/problem+json').json(problemBody(err));
}

/**
 * The server's `clientError` listener: a request Node's parser refuses before the app sees it (headers beyond the
 * server's maxHeaderSize, a malformed request line) is answered with problem details like any other refusal, and
 * the connection closed after the answer, instead of Node's bare status line and a reset.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // Nothing can be answered on a connection that is gone, or in the middle of another request's answer.
  const answering = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || answering) return void socket.destroy();
  const problem =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError(431, 'headers_too_large', 'the request headers are larger than this server accepts; shorten them')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError(408, 'request_timeout', 'the request did not arrive in time')
        : new ApiError(400, 'malformed_request', 'the request is not valid HTTP');
  const body = JSON.stringify(problemBody(problem));
  socket.end(
    `HTTP/1.1 ${problem.status} ${titles[problem.status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

const unavailableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  '57P01', // Postgres admin_shutdown
  '57P03', // Postgres cannot_connect_now (starting up or recovering)
  14, // gRPC UNAVAILABLE: Temporal cannot be reached
]);

/**
 * The database or Temporal cannot be reached right now (restarting after a crash, failing over): nothing is wrong
 * with the request, and the same request a moment later will work.
 */
function isUnavailable(err: unknown): boolean {
  let e = err as { code?: unknown; cause?: unknown; name?: string; message?: string } | undefined;
  for (let depth = 0; e && depth < 5; depth++, e = e.cause as typeof e) {
    if (unavailableCodes.has(e.code as string)) return true;
    if (e.name === 'KnexTimeoutError') return true; // no pooled connection could be had in time
    if (/^Connection (terminated|ended) unexpectedly/.test(e.message ?? '')) return true;
  }
  return false;
}

/** Maps body-parser's errors and anything unexpected to problem details; never leaks a stack trace. */
export const problemHandler: ErrorRequestHandler = (err, req, res, _next) => {
  if (err instanceof ApiError) return sendProblem(res, err);
  // A page cursor that this API did not hand out, wherever it was decoded.
  if (err instanceof CursorError) return sendProblem(res, new ApiError(400, 'invalid_cursor', err.message));
  // The router could not decode a path parameter (`%E0%A4%A`): text no parameter can be, like U+0000 (validation.ts).
  if (err instanceof URIError && (err as { status?: number }).status === 400)
    return sendProblem(res, new ApiError(422, 'invalid_path', `${err.message}: it is not percent-encoded UTF-8`));
  const e = err as { type?: string; status?: number; message?: string };
  if (e.type === 'entity.parse.failed')
    return sendProblem(res, new ApiError(400, 'malformed_json', `the request body is not valid JSON: ${e.message}`));
  if (e.type === 'entity.too.large')
    return sendProblem(
      res,
      new ApiError(
        413,
        'body_too_large',
        `the request body is larger than the limit of ${(err as { limit?: number }).limit} bytes`,
      ),
    );
  if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
    return sendProblem(res, new ApiError(415, 'unsupported_encoding', e.message ?? 'unsupported encoding'));
  if (isUnavailable(err)) {
    (req as { log?: { warn(o: object, m: string): void } }).log?.warn({ err }, 'a backing service is unavailable');
    return sendProblem(
      res,
      new ApiError(
        503,
        'service_unavailable',
        'the database or Temporal cannot be reached right now (it may be restarting); try again in a few seconds',
        { 'Retry-After': '5' },
      ),
    );
  }
  (req as { log?: { error(o: object, m: string): void } }).log?.error({ err }, 'unhandled error');
  sendProblem(
    res,
    new ApiError(
      500,
      'internal_error',
      'something went wrong on our side; the request id in the X-Request-Id header helps us find it',
    ),
  );
};
