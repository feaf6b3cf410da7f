// A mail submission server for the tests (smtp-server, as the other suites use): it asks for a login, records what
// it accepts, and can be told to do something with each message before answering (file a copy in a Sent folder as
// Gmail does, or lose its answer as a dropped connection would).
import { SMTPServer } from 'smtp-server';

export interface Submitted {
  user: string;
  from: string;
  to: string[];
  raw: string;
}

export interface SmtpSubmission {
  host: string;
  port: number;
  messages: Submitted[];
  /** Runs on each message before the answer; a thrown error is answered with its `responseCode` (a 4xx or 5xx). */
  onMessage?: (message: Submitted, n: number) => Promise<void> | void;
  close(): Promise<void>;
}

export async function startSmtpSubmission(login: { user: string; password: string }): Promise<SmtpSubmission> {
  const server = new SMTPServer({
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: true, // plain text on 127.0.0.1, which the connection allows because the operator lists it
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === login.user && auth.password === login.password) callback(null, { user: auth.username });
      else callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c) => (raw += c));
      stream.on('end', () => {
        const message: Submitted = {
          user: String(session.user),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
        };
        sink.messages.push(message);
        Promise.resolve(sink.onMessage?.(message, sink.messages.length)).then(
          () => callback(),
          (err: Error) => callback(err),
        );
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.server.address() as { port: number };
  const sink: SmtpSubmission = {
    host: '127.0.0.1',
    port,
    messages: [],
    close: () => new Promise((r) => server.close(() => r())),
  };
  return sink;
}
