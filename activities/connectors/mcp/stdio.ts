// Starting an operator-declared MCP server (CADRE_MCP_STDIO_SERVERS) and speaking to it over stdio. Written here
// rather than with the SDK's StdioClientTransport, which adds HOME, SHELL, TERM, USER... to the environment given,
// cannot change user, and is asked to drop stderr or pass it on: this one spawns with exactly the environment the
// README names, as an unprivileged user when the worker runs as root, in a fresh directory of the server's own, and
// keeps the end of its stderr to say why a server that would not start did not.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpStdio } from '../../../model/connection';
// A server that failed to start or to answer says how it ended and what it wrote to stderr: the API keeps that.
import { McpServerStartError } from '../../../services/adapters';
import { mcpSdk, type McpSdk } from './sdk';

/** How much of a server's stderr is kept: its last few KB, where a start-up error ends up. */
const stderrKeep = 4096;
const closeGraceMs = 2000;

/** A declared server could not be started as declared (its user, its directory): the operator's to fix. */
export class McpStdioSetupError extends Error {}

const run = promisify(execFile);
const users = new Map<string, Promise<{ uid: number; gid: number }>>();

/** The uid and gid of CADRE_MCP_STDIO_USER (numbers as given; a name looked up once with id(1)). */
function userIds(user: string): Promise<{ uid: number; gid: number }> {
  let ids = users.get(user);
  if (!ids) {
    const numeric = /^(\d+)(?::(\d+))?$/.exec(user);
    ids = numeric
      ? Promise.resolve({ uid: Number(numeric[1]), gid: Number(numeric[2] ?? numeric[1]) })
      : Promise.all([run('id', ['-u', '--', user]), run('id', ['-g', '--', user])]).then(
          ([u, g]) => ({ uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) }),
          (err: unknown) => {
            users.delete(user); // a user added later is found next time
            throw new McpStdioSetupError(
              `CADRE_MCP_STDIO_USER names the user "${user}", who does not exist on this machine (${(err as Error).message.split('\n')[0]}): create it or name another`,
            );
          },
        );
    users.set(user, ids);
  }
  return ids.then((found) => {
    if (found.uid === 0 || !Number.isInteger(found.uid) || !Number.isInteger(found.gid))
      throw new McpStdioSetupError(`CADRE_MCP_STDIO_USER "${user}" is root or unknown: name an unprivileged user`);
    return found;
  });
}

/** Whether uid/gid (no supplementary groups: spawn drops them) may search every directory down to `dir`. */
async function unreachableAncestor(dir: string, ids: { uid: number; gid: number }): Promise<string | undefined> {
  const parts = path.resolve(dir).split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const at = path.sep + parts.slice(0, i).join(path.sep);
    const st = await fs.stat(at);
    const bit = st.uid === ids.uid ? 0o100 : st.gid === ids.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return `${at} (mode ${(st.mode & 0o777).toString(8)})`;
  }
  return undefined;
}

/** The user to run as (when this process is root: the operator's unprivileged user) and a fresh directory it owns. */
async function prepare(name: string, stdio: McpStdio): Promise<{ ids?: { uid: number; gid: number }; dir: string }> {
  const ids = process.getuid?.() === 0 ? await userIds(stdio.stdioUser) : undefined;
  await fs.mkdir(stdio.stdioDir, { recursive: true, mode: 0o711 });
  if (ids) {
    // Its directory is reached by absolute path (HOME, TMPDIR): every directory above it must let the user through.
    const blocked = await unreachableAncestor(stdio.stdioDir, ids);
    if (blocked)
      throw new McpStdioSetupError(
        `MCP servers run as ${stdio.stdioUser} (uid ${ids.uid}), who cannot reach ${stdio.stdioDir}: ${blocked} ` +
          `does not let that user through. Let others search it (chmod o+x) or move CADRE_DATA_DIR`,
      );
  }
  const dir = await fs.mkdtemp(path.join(stdio.stdioDir, `${name}-`));
  if (ids) await fs.chown(dir, ids.uid, ids.gid);
  return { ids, dir };
}

/** The last `stderrKeep` bytes of a stream, as text. */
class Tail {
  private buf = Buffer.alloc(0);
  push(chunk: Buffer) {
    this.buf = Buffer.concat([this.buf, chunk]);
    if (this.buf.length > stderrKeep) this.buf = this.buf.subarray(this.buf.length - stderrKeep);
  }
  text(): string {
    // A character cut in two at the start is dropped; terminal colours and control characters (NUL, which no
    // PostgreSQL text holds) too: the text goes into answers and the connection's status.
    return this.buf
      .toString('utf8')
      .replace(/^\uFFFD+/, '')
      .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
      .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '')
      .trim();
  }
}

/**
 * The JSON-RPC transport to a server process started as declared: stdin and stdout carry the messages, stderr is
 * kept (its end) for errors. Its directory goes when the process does.
 */
export class ServerProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcess;
  private readonly readBuffer: ReadBuffer;
  private readonly stderr = new Tail();
  private ended?: Promise<void>;
  private exit?: { code: number | null; signal: NodeJS.Signals | null };

  private constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: string[],
    private readonly env: Record<string, string>,
    private readonly dir: string,
    private readonly ids: { uid: number; gid: number } | undefined,
    /** Values never repeated in an error (the declared environment's: tokens, keys). */
    private readonly secrets: string[],
    private readonly sdk: McpSdk,
  ) {
    this.readBuffer = new sdk.ReadBuffer();
  }

  /** The transport for the declared server `name`; its process starts when the client connects. */
  static async forServer(name: string, stdio: McpStdio): Promise<ServerProcessTransport> {
    const server = stdio.stdioServers[name];
    const { ids, dir } = await prepare(name, stdio);
    // Exactly these and the declared ones: not the worker's environment (its secrets), not a shell's defaults.
    const env = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: dir, TMPDIR: dir, ...server.env };
    const secrets = Object.values(server.env).filter((v) => v.length >= 4);
    return new ServerProcessTransport(name, server.command, server.args, env, dir, ids, secrets, await mcpSdk());
  }

  start(): Promise<void> {
    if (this.child) throw new Error(`the MCP server "${this.name}" was started already`);
    return new Promise((resolve, reject) => {
      const child = spawn(this.command, this.args, {
        env: this.env,
        cwd: this.dir,
        ...(this.ids ?? {}),
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group: closing ends what it started too (npx's child, a shell's).
        detached: true,
        shell: false,
      });
      this.child = child;
      this.ended = new Promise((done) => child.once('close', () => done()));
      child.once('error', (err) => {
        reject(new McpServerStartError(this.describe(`could not start (${err.message})`)));
        this.onerror?.(err);
      });
      child.once('spawn', () => resolve());
      child.once('exit', (code, signal) => (this.exit = { code, signal }));
      child.once('close', () => {
        void fs.rm(this.dir, { recursive: true, force: true }).catch(() => {});
        this.onclose?.();
      });
      child.stdin!.on('error', (err) => this.onerror?.(err));
      child.stdout!.on('data', (chunk: Buffer) => this.received(chunk));
      child.stdout!.on('error', (err) => this.onerror?.(err));
      child.stderr!.on('data', (chunk: Buffer) => this.stderr.push(chunk));
      child.stderr!.on('error', () => {});
    });
  }

  private received(chunk: Buffer) {
    try {
      this.readBuffer.append(chunk);
    } catch (err) {
      this.onerror?.(err as Error); // a line beyond the buffer's limit: the server is not speaking the protocol
      void this.close();
      return;
    }
    for (;;) {
      try {
        const message = this.readBuffer.readMessage();
        if (message === null) return;
        this.onmessage?.(message);
      } catch (err) {
        this.onerror?.(err as Error); // that line was not a message; the next may be
      }
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.exit) return Promise.reject(new Error(`the MCP server "${this.name}" is not running`));
    return new Promise((resolve) => {
      if (stdin.write(this.sdk.serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Ends the server: stdin closed, then SIGTERM, then SIGKILL, to its whole process group. */
  async close(): Promise<void> {
    const child = this.child;
    if (child?.pid !== undefined && !this.exit) {
      const pid = child.pid;
      const running = () =>
        Promise.race([this.ended, new Promise((r) => setTimeout(r, closeGraceMs).unref())]).then(() => !this.exit);
      child.stdin?.end();
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        if (!(await running())) break;
        try {
          process.kill(-pid, signal);
        } catch {
          // gone already
        }
      }
    }
    this.readBuffer.clear();
    // A process that ran removes its directory as it goes; one that never ran cannot.
    if (child?.pid === undefined) await fs.rm(this.dir, { recursive: true, force: true }).catch(() => {});
  }

  /** How the process ended ("exited with code 1", "exited on SIGKILL"), once it has. */
  get exitedHow(): string | undefined {
    return this.exit && `exited ${this.exit.signal ? `on ${this.exit.signal}` : `with code ${this.exit.code}`}`;
  }

  /**
   * The error to show for a connection that failed (`err`, the client's: often only "Connection closed"): how the
   * server ended, if it did, and the end of its stderr. Waits a moment for a server on its way out.
   */
  async startError(err: unknown): Promise<McpServerStartError> {
    if (err instanceof McpServerStartError) return err;
    if (!this.exit) await Promise.race([this.ended, new Promise((r) => setTimeout(r, 500).unref())]);
    const ended = this.exitedHow ?? 'did not answer';
    const reason = err instanceof Error ? err.message : String(err);
    return new McpServerStartError(this.describe(`${ended} (${reason})`));
  }

  private describe(what: string): string {
    let stderr = this.stderr.text();
    for (const secret of this.secrets) stderr = stderr.split(secret).join('[redacted]');
    return `the MCP server "${this.name}" ${what}${stderr ? `; its stderr ends with:\n${stderr}` : '; it wrote nothing to stderr'}`;
  }
}
