// Real receiving ends for side effects: an HTTP endpoint and an SMTP server, each recording what arrived.
import http from 'node:http';
import { SMTPServer } from 'smtp-server';

export interface HttpSink {
  url: string;
  requests: { method: string; path: string; idempotencyKey?: string; body: unknown }[];
  close(): Promise<void>;
}

export async function startHttpSink(respond: (n: number) => number = () => 200): Promise<HttpSink> {
  const requests: HttpSink['requests'] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      requests.push({
        method: req.method!,
        path: req.url!,
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        body: raw ? JSON.parse(raw) : undefined,
      });
      const status = respond(requests.length);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ received: requests.length }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export interface SmtpSink {
  url: string;
  messages: { to: string[]; raw: string }[];
  close(): Promise<void>;
}

export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: SmtpSink['messages'] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c) => (raw += c));
      stream.on('end', () => {
        messages.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.server.address() as { port: number };
  return { url: `smtp://127.0.0.1:${port}`, messages, close: () => new Promise((r) => server.close(() => r())) };
}
