// Serves one PGlite instance to many Postgres clients over TCP. PGlite is a single backend, so the clients'
// protocol messages must take turns; @electric-sql/pglite-socket (0.2.x) takes turns per *message*, which lets
// one connection's Parse/Bind/Execute interleave with another's, and can run one connection's statements
// inside another's transaction. This queue takes turns per *exchange*: a connection keeps the backend from its
// first message to its Sync (or simple Query), and for as long as its transaction is open. The connection
// handler (wire framing, SSL and cancel requests) is the package's own.
// An exchange's pipelined messages (Parse, Bind, Describe, Execute) are run together with its Sync, in one call
// into PGlite, and their answers sent in one socket write: PGlite hands answers over in many small pieces (a write
// per piece took a sixth of the server's CPU), and each call costs about what a small statement does.
import { timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';

interface Pending {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (err: unknown) => void;
}

const SIMPLE_QUERY = 0x51; // 'Q'
const SYNC = 0x53; // 'S'
const TERMINATE = 0x58; // 'X'
const syncMessage = new Uint8Array([SYNC, 0, 0, 0, 4]);
// Parse, Bind, Describe, Execute, Close: a client sends Sync or Flush after them before it waits for an answer.
const PIPELINED = new Set([0x50, 0x42, 0x44, 0x45, 0x43]);

/** Whether this message ends an exchange: a simple query, a Sync, or an untyped startup-phase message. */
function endsExchange(message: Uint8Array): boolean {
  const type = message[0];
  return type === SIMPLE_QUERY || type === SYNC || type === 0;
}

export class ExchangeQueue {
  private queue: Pending[] = [];
  private processing = false;
  private owner: number | null = null; // the connection whose exchange or transaction is in progress
  private readonly closed = new Set<number>(); // connections gone; they must never keep the backend
  private held: Uint8Array[] = []; // the answers to the owner's message being run, sent in one write
  private batch: Uint8Array[] = []; // the owner's pipelined messages, run with its Sync (see PIPELINED)

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject });
      void this.process();
    });
  }

  private async process(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      for (;;) {
        const index = this.owner === null ? 0 : this.queue.findIndex((p) => p.handlerId === this.owner);
        if (index < 0 || this.queue.length === 0) return; // the owner's next message has not arrived yet
        const [next] = this.queue.splice(index, 1);
        if (PIPELINED.has(next.message[0])) {
          // Kept for the exchange's Sync: PGlite runs a buffer of many messages in one call, and a call per
          // message cost as much again as the statement. The connection's next message is read meanwhile.
          this.batch.push(next.message);
          this.owner = next.handlerId;
          next.resolve(0);
          continue;
        }
        // A connection that ends before its Sync: Postgres would roll its exchange back, so it is dropped unrun.
        const runAlone = next.message[0] === TERMINATE || this.batch.length === 0;
        const message = runAlone ? next.message : Buffer.concat([...this.batch, next.message]);
        this.batch = [];
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(message, {
              onRawData: (data) => {
                bytes += data.length;
                // PGlite reuses its buffer: keep a copy.
                this.held.push(data.slice());
              },
            }),
          );
        } catch (err) {
          this.held = [];
          next.reject(err);
          continue;
        }
        if (this.held.length > 0) {
          next.onData(this.held.length === 1 ? this.held[0] : Buffer.concat(this.held));
          this.held = [];
        }
        this.owner = endsExchange(next.message) && !this.db.isInTransaction() ? null : next.handlerId;
        // The connection may have closed while its message ran, after its cleanup found nothing to release.
        if (this.owner !== null && this.closed.has(this.owner)) await this.release();
        else if (this.owner !== next.handlerId) this.closed.delete(next.handlerId);
        next.resolve(bytes);
      }
    } finally {
      this.processing = false;
    }
  }

  getQueueLength(): number {
    return this.queue.length;
  }

  clearQueueForHandler(handlerId: number): void {
    this.closed.add(handlerId);
    this.queue = this.queue.filter((p) => {
      if (p.handlerId !== handlerId) return true;
      p.reject(new Error('connection closed'));
      return false;
    });
  }

  /** A connection that went away mid-exchange or mid-transaction must not hold the backend. */
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.processing) return; // the loop releases it after the message in flight
    if (this.owner !== handlerId) {
      this.closed.delete(handlerId);
      return;
    }
    await this.release();
    void this.process();
  }

  private async release(): Promise<void> {
    await this.db.runExclusive(() => this.db.execProtocolRaw(syncMessage));
    // exec takes PGlite's lock itself: calling it inside runExclusive would wait on itself forever.
    if (this.db.isInTransaction()) await this.db.exec('ROLLBACK');
    this.held = [];
    this.batch = [];
    if (this.owner !== null) this.closed.delete(this.owner);
    this.owner = null;
  }
}

export interface PgliteServer {
  port: number;
  stop(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const PROTOCOL_3 = 196608;

/** Reads exactly `n` bytes from a paused socket (undefined if it closes first). */
function readBytes(socket: net.Socket, n: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const tryRead = () => {
      const chunk = socket.read(n) as Buffer | null;
      if (chunk === null) return;
      socket.off('readable', tryRead).off('close', closed);
      resolve(chunk);
    };
    const closed = () => {
      socket.off('readable', tryRead);
      resolve(undefined);
    };
    socket.on('readable', tryRead).once('close', closed);
    tryRead();
  });
}

const fatal = (code: string, message: string) => {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
};

/**
 * PGlite trusts every connection; this asks a connection for the password first, as Postgres's `password` method does
 * (the password crosses loopback only): SSL and GSS encryption are declined, the startup message is kept, the client
 * is asked for its password, and on a match the startup message is handed on, so PGlite answers it as usual
 * (AuthenticationOk, parameters, ReadyForQuery). Cancel requests carry their own secret and pass untouched.
 */
async function authenticated(socket: net.Socket, password: string): Promise<Buffer | undefined> {
  for (;;) {
    const length = await readBytes(socket, 4);
    if (!length) return undefined;
    const body = await readBytes(socket, length.readInt32BE(0) - 4);
    if (!body) return undefined;
    const code = body.readInt32BE(0);
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      socket.write('N');
      continue;
    }
    const startup = Buffer.concat([length, body]);
    if (code !== PROTOCOL_3) return startup; // a cancel request, or a protocol PGlite refuses itself
    const user = /(?:^|\0)user\0([^\0]*)/.exec(body.subarray(4).toString('utf8'))?.[1] ?? '';
    const ask = Buffer.alloc(9);
    ask.write('R', 0);
    ask.writeInt32BE(8, 1);
    ask.writeInt32BE(3, 5); // AuthenticationCleartextPassword
    socket.write(ask);
    const type = await readBytes(socket, 1);
    const size = type && (await readBytes(socket, 4));
    const given = size && (await readBytes(socket, size.readInt32BE(0) - 4));
    const expected = Buffer.from(`${password}\0`);
    if (type?.toString() === 'p' && given && given.length === expected.length && timingSafeEqual(given, expected))
      return startup;
    socket.end(fatal('28P01', `password authentication failed for user "${user}"`), () => socket.destroy());
    return undefined;
  }
}

export async function servePglite(
  db: PGlite,
  opts: { host: string; port: number; maxConnections: number; password?: string },
): Promise<PgliteServer> {
  const queue = new ExchangeQueue(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const authenticating = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    if (handlers.size >= opts.maxConnections) {
      socket.end();
      return;
    }
    const handler = new PGLiteSocketHandler({
      queryQueue: queue as unknown as PGLiteSocketHandlerOptions['queryQueue'],
      closeOnDetach: true,
    });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener('close', forget);
    handler.addEventListener('error', forget);
    const attach = () =>
      handler.attach(socket).catch(() => {
        forget();
        socket.destroy();
      });
    if (opts.password === undefined) return void attach();
    socket.pause();
    socket.on('error', () => socket.destroy());
    // A client that never answers is not kept: a handshake takes a few round trips on loopback.
    socket.setTimeout(10_000, () => socket.destroy());
    authenticating.add(socket);
    void authenticated(socket, opts.password).then((startup) => {
      authenticating.delete(socket);
      socket.setTimeout(0);
      if (!startup) {
        forget();
        if (!socket.writableEnded) socket.destroy(); // else it closes once the refusal is sent
        return;
      }
      socket.unshift(startup); // the handler reads it first, as if nothing had come before
      void attach();
      socket.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    async stop() {
      for (const socket of authenticating) socket.destroy();
      for (const h of handlers) await h.detach(true);
      handlers.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
