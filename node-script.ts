// How one of Cadre's modules is started as a process of its own, the way the running code itself runs: compiled
// JavaScript (dist/, scripts/build.cjs) with plain `node`, TypeScript sources (tests) through tsx's CommonJS hook.
// Only that hook: `--import tsx` also starts a thread of ESM loader hooks, which held 10-40 MB per process.

/** `[command, args]` that runs `file` (from require.resolve or __filename, so .ts or .js as this code is) with `args`. */
export function nodeScript(file: string, ...args: string[]): [string, string[]] {
  const loader = file.endsWith('.ts') ? ['--require', require.resolve('tsx/cjs')] : [];
  return [process.execPath, [...loader, file, ...args]];
}
