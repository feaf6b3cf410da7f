// The console's built files served while a rebuild replaces them (api/console-assets.ts), over real HTTP, in front of
// the same static server adapter-node's handler uses (sirv, which lists the folder once when it loads): a file
// removed since is a 404 or its other form, never a crash of the process (which fails this test as an uncaught error).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import express from 'express';
import sirv from 'sirv';
import { consoleWithAssets } from '../../api/console-assets';
import { problemHandler } from '../../api/problem';

describe('console assets', () => {
  let dir: string;
  let server: Server;
  let base: string;
  /** The paths the console's page handler (its server-side rendering) was handed. */
  const rendered: string[] = [];

  const write = (file: string, content: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-assets-'));
    write('_app/immutable/entry/start.abc.js', 'console.log("start")');
    // Each form says which it is once decompressed (fetch decompresses what it is sent).
    write('_app/immutable/entry/start.abc.js.br', zlib.brotliCompressSync('from the .br'));
    write('_app/immutable/entry/start.abc.js.gz', zlib.gzipSync('from the .gz'));
    write('_app/version.json', '{"version":"1"}');
    write('favicon.svg', '<svg/>');
    write('favicon.svg.br', zlib.brotliCompressSync('<svg from the .br/>'));
    // As adapter-node's handler: its static server over the same folder, listed now, then the pages.
    const assets = sirv(dir, { etag: true, gzip: true, brotli: true });
    const pages: express.RequestHandler = (req, res) =>
      assets(req, res, () => {
        rendered.push(req.path);
        res.type('html').send('<p>a page</p>');
      });
    const app = express();
    app.use(consoleWithAssets(dir, pages));
    app.use(problemHandler);
    server = app.listen(0);
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const get = (pathname: string, encoding = 'br, gzip') =>
    fetch(`${base}${pathname}`, { headers: { 'accept-encoding': encoding } });

  it('serves the precompressed form the browser accepts, content-hashed files cached for good', async () => {
    const script = await get('/_app/immutable/entry/start.abc.js');
    assert.equal(script.status, 200);
    assert.equal(script.headers.get('content-encoding'), 'br');
    assert.match(script.headers.get('content-type')!, /javascript/);
    assert.equal(script.headers.get('cache-control'), 'public,max-age=31536000,immutable');
    assert.equal(script.headers.get('vary'), 'Accept-Encoding');
    assert.equal(await script.text(), 'from the .br');
    const gzip = await get('/_app/immutable/entry/start.abc.js', 'gzip');
    assert.equal(gzip.headers.get('content-encoding'), 'gzip');
    assert.equal(await gzip.text(), 'from the .gz');
    const plain = await get('/_app/version.json', 'identity');
    assert.equal(plain.headers.get('content-encoding'), null);
    assert.equal(plain.headers.get('cache-control'), null, 'a file that changes between builds is not cached for good');
    assert.deepEqual(await plain.json(), { version: '1' });
    const again = await fetch(`${base}/_app/version.json`, {
      headers: { 'if-none-match': plain.headers.get('etag')! },
    });
    assert.equal(again.status, 304);
    assert.deepEqual(rendered, [], 'no file reached the page handler');
  });

  it('after a rebuild removed files: the uncompressed form, a 404 for what is gone, new files served', async () => {
    // The rebuild is under way: the compressed forms are not written yet, and an old chunk is gone for good.
    fs.rmSync(path.join(dir, 'favicon.svg.br'));
    fs.rmSync(path.join(dir, '_app/immutable/entry/start.abc.js.br'));
    fs.rmSync(path.join(dir, '_app/immutable/entry/start.abc.js.gz'));
    const favicon = await get('/favicon.svg');
    assert.equal(favicon.status, 200);
    assert.equal(favicon.headers.get('content-encoding'), null);
    assert.equal(await favicon.text(), '<svg/>');

    fs.rmSync(path.join(dir, '_app/immutable/entry/start.abc.js'));
    for (const encoding of ['br, gzip', 'gzip', 'identity']) {
      const gone = await get('/_app/immutable/entry/start.abc.js', encoding);
      assert.equal(gone.status, 404, encoding);
      assert.match(gone.headers.get('content-type')!, /^application\/problem\+json/);
      assert.match(((await gone.json()) as { detail: string }).detail, /no longer in the console's build.*reload/);
    }
    write('_app/immutable/entry/start.def.js', 'console.log("rebuilt")');
    assert.equal(await (await get('/_app/immutable/entry/start.def.js')).text(), 'console.log("rebuilt")');
    // Still serving: the pages, and nothing the page handler was given was a file.
    const page = await get('/agents/123');
    assert.equal(page.status, 200);
    assert.equal(await page.text(), '<p>a page</p>');
    assert.deepEqual(rendered, ['/agents/123']);
  });

  it('hands the pages every path that names no file of the build, and none outside it', async () => {
    rendered.length = 0;
    for (const pathname of ['/', '/_app/', '/%E0%A4%A', '/..%2f..%2fetc%2fpasswd', '/.env']) {
      const res = await get(pathname);
      assert.equal(res.status, 200, pathname);
      assert.equal(await res.text(), '<p>a page</p>', pathname);
    }
    assert.equal(rendered.length, 5);
  });
});
