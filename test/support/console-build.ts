// The console's build (ui/build), made once per test process from the current sources and shared by every browser
// suite. Each build names its client chunks anew (SvelteKit stamps a version into them), while Node caches the
// handler module a suite imports: a second build in the same process would delete the chunks that the first suite's
// cached handler still serves, and the next suite's pages would load without their scripts.
//
// The cached handler also keeps the environment it first saw (SvelteKit copies $env/dynamic at init), so its
// CADRE_INTERNAL_API_URL would stay the first suite's web server, closed by the time the next suite signs in. The
// console is given one address for the whole process instead, which forwards to the current suite's server.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** Where the console's calls to the API go now: the web server of the suite that asked last. */
let apiTarget = '';
let forwarder: Promise<string> | undefined;

/** The console's internal API address for this process: it forwards each call to `apiTarget`. */
function startForwarder(): Promise<string> {
  const server = http.createServer((req, res) => {
    const target = new URL(req.url!, apiTarget);
    const upstream = http.request(
      target,
      { method: req.method, headers: { ...req.headers, host: target.host } },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => res.destroy(err));
    req.pipe(upstream);
  });
  server.unref(); // never what keeps the test process alive
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

/**
 * The built console's request handler, to mount in a test's web server after the API routes (as scripts/web.ts);
 * `apiBase` is that web server's address, which the console calls as the signed-in person.
 */
export async function consoleHandler(apiBase: string): Promise<RequestHandler> {
  buildConsole();
  apiTarget = apiBase;
  forwarder ??= startForwarder();
  process.env.CADRE_INTERNAL_API_URL = await forwarder;
  return (await import(consoleHandlerPath)).handler as RequestHandler;
}
