// The children of `npm start` and the supervisor that keeps them up. Each child runs in its own process group (so a
// Ctrl-C reaches only the supervisor, which then stops them in order), with its output prefixed line by line.
// Runs are durable in Temporal and Postgres, so a crashed child is restarted with backoff rather than taking the
// service down; only repeated fast crashes (a child that cannot stay up) stop everything.
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import readline from 'node:readline';
import { lowerPriority, spawnDetached } from './priority';
import { readableLogLine } from './readable-log';

const colors = { temporal: 35, db: 34, worker: 33, web: 32 } as Record<string, number>;

export interface ChildSpec {
  name: string;
  command: string;
  args: string[];
  /** Variables added to the supervisor's environment for this child. */
  env?: NodeJS.ProcessEnv;
  /** Checked before each restart (not before the first start): throws when starting again would be unsafe. */
  beforeRestart?: () => Promise<void> | void;
  /** Work that can wait in a queue: runs at a lower CPU priority than the API (scripts/priority.ts). */
  background?: boolean;
  /**
   * With `background`: the child starts at normal priority and is lowered once it prints a line matching this (it
   * is up), so that its own start is not slowed on a busy machine; each restart likewise.
   */
  lowerOnceUp?: RegExp;
  /** Lines the child prints that are known to be harmless (and read as errors by a newcomer): left out of the log. */
  quiet?: RegExp;
  /**
   * Lines left out once the supervisor is stopping this child (Ctrl-C): what a server says while its own parts lose
   * each other on the way down. The same lines while it runs are printed.
   */
  quietWhileStopping?: RegExp;
}

export interface RestartPolicy {
  /** Delay before the first restart; doubled for each further crash within `crashWindowMs`. */
  initialDelayMs: number;
  maxDelayMs: number;
  crashWindowMs: number;
  /** This many crashes of one child within `crashWindowMs` and the supervisor gives up. */
  maxCrashesInWindow: number;
}

export const defaultRestartPolicy: RestartPolicy = {
  initialDelayMs: 1000,
  maxDelayMs: 30_000,
  crashWindowMs: 60_000,
  maxCrashesInWindow: 5,
};

/** One child process, started again by its supervisor when it exits on its own. */
export class Supervised {
  child!: ChildProcess;
  private exited!: Promise<void>;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly crashes: number[] = [];

  constructor(
    readonly spec: ChildSpec,
    private readonly owner: Supervisor,
  ) {
    this.spawn();
  }

  get name(): string {
    return this.spec.name;
  }

  private spawn(): void {
    const { cwd, env } = this.owner.opts;
    const { command, args, background = false, lowerOnceUp, quiet, quietWhileStopping } = this.spec;
    let lowerWhen = background ? lowerOnceUp : undefined;
    const child = spawnDetached(
      command,
      args,
      { cwd, env: { ...env, ...this.spec.env }, stdio: ['ignore', 'pipe', 'pipe'] },
      background && !lowerWhen,
    );
    this.child = child;
    const prefix = process.stdout.isTTY ? `\x1b[${colors[this.name] ?? 36}m[${this.name}]\x1b[0m ` : `[${this.name}] `;
    for (const stream of [child.stdout!, child.stderr!]) {
      readline.createInterface({ input: stream }).on('line', (line) => {
        const harmless = quiet?.test(line) || (this.stopping && quietWhileStopping?.test(line));
        if (!harmless) {
          const shown = this.owner.opts.readableLogs ? readableLogLine(line) : line;
          process.stdout.write(shown.replace(/^/gm, prefix) + '\n');
        }
        if (lowerWhen?.test(line) && child.pid) {
          lowerWhen = undefined;
          lowerPriority(child.pid);
        }
      });
    }
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        resolve();
        if (!this.stopping) this.owner.childExited(this, code === null ? `signal ${signal}` : `code ${code}`);
      }),
    );
  }

  /** Schedules a restart with backoff; returns false when this child crashed too often to try again. */
  scheduleRestart(how: string): boolean {
    const { policy, log } = this.owner.opts;
    const now = Date.now();
    this.crashes.push(now);
    while (this.crashes.length > 0 && now - this.crashes[0] > policy.crashWindowMs) this.crashes.shift();
    const recent = this.crashes.length;
    if (recent >= policy.maxCrashesInWindow) {
      log(
        `${this.name} exited unexpectedly (${how}): ${recent} crashes within ${policy.crashWindowMs / 1000} s; giving up`,
      );
      return false;
    }
    const delay = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (recent - 1));
    log(`${this.name} exited unexpectedly (${how}); restarting it in ${delay / 1000} s, the rest stay up`);
    this.restartTimer = setTimeout(() => void this.restart(), delay);
    return true;
  }

  private async restart(): Promise<void> {
    this.restartTimer = undefined;
    if (this.stopping) return;
    try {
      await this.spec.beforeRestart?.();
    } catch (err) {
      this.owner.opts.log(`${this.name} cannot be restarted: ${(err as Error).message}`);
      void this.owner.shutdown(1);
      return;
    }
    if (this.stopping) return;
    this.spawn();
    this.owner.opts.log(`${this.name} restarted (pid ${this.child.pid})`);
  }

  /** SIGTERM to the whole group, SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
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

export interface SupervisorOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  policy: RestartPolicy;
  log: (line: string) => void;
  /** The children's JSON log lines shown as short lines a person reads (scripts/readable-log.ts). */
  readableLogs?: boolean;
  /** Called once everything has stopped after a shutdown. */
  exit: (code: number) => void;
}

/**
 * Starts children, restarts the ones that crash once the stack is up (`healing`), and stops them all in reverse
 * order of start on shutdown. Before the stack is up a crash fails the start instead: a child that cannot come up
 * at all is a configuration problem to report, not to retry.
 */
export class Supervisor {
  readonly opts: SupervisorOptions;
  readonly children: Supervised[] = [];
  healing = false;
  private shuttingDown = false;

  constructor(opts: Partial<SupervisorOptions> & Pick<SupervisorOptions, 'cwd' | 'env'>) {
    this.opts = {
      policy: defaultRestartPolicy,
      log: (line) => console.error(line),
      exit: (code) => process.exit(code),
      ...opts,
    };
  }

  get stopping(): boolean {
    return this.shuttingDown;
  }

  /** Throws once a shutdown has begun: a start sequence still under way must not add children nobody stops. */
  start(spec: ChildSpec): Supervised {
    if (this.shuttingDown) throw new Error(`not starting ${spec.name}: Cadre is stopping`);
    const child = new Supervised(spec, this);
    this.children.push(child);
    return child;
  }

  /** @internal called by a child that exited without being asked to. */
  childExited(child: Supervised, how: string): void {
    if (this.shuttingDown) return;
    if (!this.healing) {
      this.opts.log(`${child.name} exited unexpectedly (${how}); stopping the rest`);
      void this.shutdown(1);
      return;
    }
    if (!child.scheduleRestart(how)) void this.shutdown(1);
  }

  /** Stops every child in reverse order of start. */
  async stopAll(): Promise<void> {
    for (const c of [...this.children].reverse()) await c.stop();
  }

  /** Stops everything (once), then exits with `code`. */
  async shutdown(code: number): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    if (this.children.length > 0) this.opts.log('stopping Cadre…');
    await this.stopAll();
    this.opts.exit(code);
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
