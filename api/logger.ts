import pino from 'pino';

/** Structured JSON logs. Credentials are redacted wherever they could appear in a request or an error. */
export function createLogger(level: string, name: string, destination?: pino.DestinationStream) {
  return pino(
    {
      name,
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'req.headers["x-api-key"]',
          'req.headers["x-csrf-token"]',
          'res.headers["set-cookie"]',
          '*.apiKey',
          '*.password',
          '*.secret',
          '*.client_secret',
          '*.token',
        ],
        censor: '[redacted]',
      },
    },
    // Standard output, written off the request's path: a synchronous write per request line cost the web a
    // sixth of its CPU per run start under load. Lines still buffered are flushed when the process exits.
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
export type Logger = ReturnType<typeof createLogger>;

// Links that carry a token in their path (invitations, password resets, Run Mode, webhooks' public forms are not
// secret) and the provider's answer to a single sign-on (code, state) must not reach the logs either.
const tokenInPath = /(\/(?:invite|reset-password|r|invitations|run-links)\/)[A-Za-z0-9_-]{20,}/g;
const tokenInQuery = /([?&](?:code|state|token)=)[^&]+/g;

export const redactUrl = (url: string | undefined) =>
  url?.replace(tokenInPath, '$1[redacted]').replace(tokenInQuery, '$1[redacted]');
