// The console's production build for the browser tests, made once per test process from the current sources, and
// its handler for a suite that serves it in-process. A second build would give its files new names (SvelteKit stamps
// each build with a version of its own) while a suite that already imported ui/build/handler.js keeps serving the
// first build's names from memory, so one build is shared by every suite of the process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { RequestHandler } from 'express';

const repoDir = path.resolve(__dirname, '../..');
const handlerPath = path.join(repoDir, 'ui', 'build', 'handler.js');
let built = false;

/** Builds the console unless this process already has; answers the path of its handler. */
export function buildConsoleOnce(): string {
  if (!built) {
    const build = spawnSync('npm', ['run', 'build:ui'], { cwd: repoDir, encoding: 'utf8' });
    assert.equal(build.status, 0, `npm run build:ui failed:\n${build.stdout}\n${build.stderr}`);
    built = true;
  }
  return handlerPath;
}

/** Where the console of this process reaches the API: a forwarder to the API of the suite now running. */
let apiTarget = '';
let forwarder: Promise<string> | undefined;

function startForwarder(): Promise<string> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, apiTarget);
    const out = http.request(url, { method: req.method, headers: { ...req.headers, host: url.host } }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    out.on('error', (err) => res.writeHead(502).end(String(err)));
    req.pipe(out);
  });
  server.unref();
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
}

/**
 * The console's request handler, reaching the API at `apiBase`. SvelteKit reads its environment once, when its
 * handler module starts; every suite of the process shares that module, so the console's API address
 * (CADRE_INTERNAL_API_URL) is a forwarder that each suite points at its own API.
 */
export async function consoleHandler(apiBase: string): Promise<RequestHandler> {
  apiTarget = apiBase;
  forwarder ??= startForwarder();
  process.env.CADRE_INTERNAL_API_URL = await forwarder;
  return ((await import(buildConsoleOnce())) as { handler: RequestHandler }).handler;
}
