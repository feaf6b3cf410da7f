// Child processes of `npm start`: each in its own process group (so a Ctrl-C reaches only the supervisor,
// which then stops them in order), with its output prefixed line by line.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import readline from 'node:readline';

const colors = { temporal: 35, db: 34, worker: 33, web: 32 } as Record<string, number>;

export class Supervised {
  readonly child: ChildProcess;
  private exited: Promise<number | null>;
  stopping = false;

  constructor(
    readonly name: string,
    command: string,
    args: string[],
    opts: { cwd: string; env: NodeJS.ProcessEnv; onUnexpectedExit: (name: string, code: number | null) => void },
  ) {
    this.child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const prefix = process.stdout.isTTY ? `\x1b[${colors[name] ?? 36}m[${name}]\x1b[0m ` : `[${name}] `;
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      readline.createInterface({ input: stream }).on('line', (line) => process.stdout.write(prefix + line + '\n'));
    }
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    void this.exited.then((code) => {
      if (!this.stopping) opts.onUnexpectedExit(name, code);
    });
  }

  /** SIGTERM to the whole group, SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    this.stopping = true;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(-this.child.pid!, sig);
      } catch {
        // already gone
      }
    };
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
    signal('SIGKILL'); // anything the process left behind in its group
  }
}

export async function waitFor(what: string, check: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      await check();
      return;
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(
    `${what} did not become ready within ${Math.round(timeoutMs / 1000)} s: ${(last as Error)?.message ?? last}`,
  );
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
export function tcpOpen(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}
