// Every process entry point runs through here: a problem a person can fix is printed as one line, not a stack.
import { ConfigError } from '../cadre.config';

export class StartupError extends Error {}

export function oneLine(err: unknown): string {
  if (err instanceof ConfigError || err instanceof StartupError) return err.message;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === 'EADDRINUSE')
    return `port ${e.port} on ${e.address} is already in use: stop what uses it or choose another port in the configuration`;
  if (e?.code === 'EACCES' && e.path) return `cannot write to ${e.path}: check the permissions of CADRE_DATA_DIR`;
  if (e?.code === 'ECONNREFUSED') return `cannot connect to ${e.address}:${e.port}: is the server running?`;
  return err instanceof Error ? err.message : String(err);
}

export function main(name: string, fn: () => Promise<unknown>): void {
  fn().catch((err: unknown) => {
    console.error(`${name}: ${oneLine(err)}`);
    if (process.env.CADRE_DEBUG) console.error(err);
    process.exit(1);
  });
}
