// Errors as RFC 9457 problem details, each with a stable machine-readable `code`.
import type { ErrorRequestHandler, Response } from 'express';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export function sendProblem(res: Response, err: ApiError): void {
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res
    .status(err.status)
    .type('application/problem+json')
    .json({
      type: `https://cadre.dev/problems/${err.code}`,
      title: titles[err.status] ?? 'Error',
      status: err.status,
      code: err.code,
      detail: err.message,
      ...err.extra,
    });
}

/** Maps body-parser's errors and anything unexpected to problem details; never leaks a stack trace. */
export const problemHandler: ErrorRequestHandler = (err, req, res, _next) => {
  if (err instanceof ApiError) return sendProblem(res, err);
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
