// Serves one PGlite instance to many Postgres clients over TCP. PGlite is a single backend, so the clients'
// protocol messages must take turns; @electric-sql/pglite-socket (0.2.x) takes turns per *message*, which lets
// one connection's Parse/Bind/Execute interleave with another's, and can run one connection's statements
// inside another's transaction. This queue takes turns per *exchange*: a connection keeps the backend from its
// first message to its Sync (or simple Query), and for as long as its transaction is open. The connection
// handler (wire framing, SSL and cancel requests) is the package's own.
// An exchange's pipelined messages (Parse, Bind, Describe, Execute) are run together with its Sync, in one call
// into PGlite, and their answers sent in one socket write: PGlite hands answers over in many small pieces (a write
// per piece took a sixth of the server's CPU), and each call costs about what a small statement does.
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

export async function servePglite(
  db: PGlite,
  opts: { host: string; port: number; maxConnections: number },
): Promise<PgliteServer> {
  const queue = new ExchangeQueue(db);
  const handlers = new Set<PGLiteSocketHandler>();
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
    handler.attach(socket).catch(() => {
      forget();
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    async stop() {
      for (const h of handlers) await h.detach(true);
      handlers.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
