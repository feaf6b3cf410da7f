// Every process entry point runs through here: a problem a person can fix is printed as one line, not a stack.

export class StartupError extends Error {}

export function oneLine(err: unknown): string {
  // cadre.config's ConfigError by its name: importing the class would load zod into the supervisor (scripts/start.ts),
  // which reads its configuration through a short-lived child and must hold only what supervising needs.
  if (err instanceof StartupError || (err instanceof Error && err.name === 'ConfigError')) return err.message;
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
