// The API answers first. When a burst of runs saturates the machine, the processes whose work can wait a few
// milliseconds in a queue (the Temporal server, the worker) run at a lower CPU priority than the web process and the
// database it reads. A start then still answers in tens of milliseconds while runs queue a little longer: the machine
// does the same work either way, the scheduler only decides who waits. (npm run bench:runs measures it.)
//
// A background child whose start is itself work to wait for (the worker bundles its workflows before it polls: on a
// busy machine, at nice 10, that took from 73 s to 2.5 min) starts at normal priority and is lowered once it is up
// (`lowerPriority`). The other way round, starting it lowered and raising it once up, cannot work: without
// CAP_SYS_NICE (RLIMIT_NICE is 0 by default) a process may raise its threads' nice value, never lower it again.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * nice 10 weighs a tenth of nice 0 in Linux's scheduler. Measured with `npm run bench:runs` (a burst of 1,000
 * starts while the runs execute): start p99 128–143 ms at equal priority, 83–134 ms at nice 5, 59–83 ms at nice 10,
 * with runs ending as fast as before.
 */
export const backgroundNice = 10;

let niceBinary: string | null | undefined;

/** `nice` where this machine has one (it is POSIX, but a slim image may lack it). */
function findNice(): string | null {
  niceBinary ??=
    (process.env.PATH ?? '')
      .split(path.delimiter)
      .map((dir) => path.join(dir, 'nice'))
      .find((file) => {
        try {
          fs.accessSync(file, fs.constants.X_OK);
          return true;
        } catch {
          return false;
        }
      }) ?? null;
  return niceBinary;
}

/**
 * The command line that runs `command` at background priority. Through `nice`, which then execs the command (same
 * pid), so every thread the program starts inherits the priority; lowering it from outside after the start would
 * miss the threads already running (Linux keeps a nice value per thread).
 */
function inBackground(command: string, args: string[]): [string, string[]] {
  const nice = findNice();
  return nice ? [nice, ['-n', String(backgroundNice), command, ...args]] : [command, args];
}

/**
 * A detached child leads a session of its own, and where Linux groups sessions (autogroups) it shares the CPU between
 * the groups first, whatever their threads' nice: the child's group is lowered too. Elsewhere there is nothing to do.
 */
function lowerSessionPriority(pid: number): void {
  try {
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(backgroundNice));
  } catch {
    // no autogroups here: another kernel, or another system
  }
}

/** Spawns `command` detached (a session and process group of its own), at background priority when `background`. */
export function spawnDetached(
  command: string,
  args: string[],
  options: SpawnOptions,
  background: boolean,
): ChildProcess {
  const [file, argv] = background ? inBackground(command, args) : [command, args];
  const child = spawn(file, argv, { ...options, detached: true });
  if (background && child.pid) lowerSessionPriority(child.pid);
  return child;
}

/**
 * Lowers a running child to background priority: every thread of it, as `nice` would have (Linux keeps a nice value
 * per thread, and a thread inherits its creator's), until a pass finds none left to lower (threads started meanwhile),
 * and its session where sessions are grouped. Where there is no /proc, the process as a whole.
 */
export function lowerPriority(pid: number): void {
  const target = Math.min(19, os.getPriority() + backgroundNice);
  const threads = () => {
    try {
      return fs.readdirSync(`/proc/${pid}/task`).map(Number);
    } catch {
      return undefined;
    }
  };
  const lower = (id: number) => {
    try {
      if (os.getPriority(id) >= target) return false;
      os.setPriority(id, target);
      return true;
    } catch {
      return false; // gone meanwhile
    }
  };
  if (threads() === undefined) {
    lower(pid);
    return;
  }
  for (let pass = 0; pass < 10; pass++) {
    const lowered = (threads() ?? []).filter(lower).length;
    if (lowered === 0) break;
  }
  lowerSessionPriority(pid);
}
