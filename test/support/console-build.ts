// The console's build (ui/build), made once per test process from the current sources and shared by every browser
// suite. Each build names its client chunks anew (SvelteKit stamps a version into them), while Node caches the
// handler module a suite imports: a second build in the same process would delete the chunks that the first suite's
// cached handler still serves, and the next suite's pages would load without their scripts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { RequestHandler } from 'express';

const repoDir = path.join(__dirname, '..', '..');
export const consoleHandlerPath = path.join(repoDir, 'ui', 'build', 'handler.js');

let built = false;

/** Builds the console unless this process already did (a stale ui/build from an earlier run is never used). */
export function buildConsole(): void {
  if (built) return;
  const build = spawnSync('npm', ['run', 'build:ui'], { cwd: repoDir, encoding: 'utf8' });
  assert.equal(build.status, 0, `npm run build:ui failed:\n${build.stdout}\n${build.stderr}`);
  assert.ok(fs.existsSync(consoleHandlerPath), 'the build wrote ui/build/handler.js');
  built = true;
}

/** The built console's request handler, to mount in a test's web server after the API routes (as scripts/web.ts). */
export async function consoleHandler(): Promise<RequestHandler> {
  buildConsole();
  return (await import(consoleHandlerPath)).handler as RequestHandler;
}
