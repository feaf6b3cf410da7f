// The Python test servers of .tools/pyservers (moto, localstripe), each started on a free port for one suite and
// stopped after it. A server that is missing or does not come up fails the suite and says why, with its output.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { freePort } from './ports';

export interface PyServer {
  port: number;
  url: string;
  /** What it printed, for a failing test's message. */
  output(): string;
  stop(): Promise<void>;
}

const pyservers = path.resolve(__dirname, '../../.tools/pyservers/bin');

export async function startPyServer(
  name: string,
  args: (port: number) => string[],
  opts: { command?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<PyServer> {
  const command = path.join(pyservers, opts.command ?? name);
  if (!fs.existsSync(command))
    throw new Error(`${name} is not installed at ${command}: scripts/prepare-test.sh installs the Python test servers`);
  const port = await freePort();
  let output = '';
  const child: ChildProcess = spawn(command, args(port), {
    env: { ...process.env, ...opts.env },
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  };
  try {
    await waitFor(
      name,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) return; // reported below, without waiting on
        await tcpOpen(port);
      },
      30_000,
    );
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited with ${child.exitCode ?? child.signalCode} before it listened`);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${name} said:\n${output}`);
  }
  return { port, url: `http://127.0.0.1:${port}`, output: () => output, stop };
}
