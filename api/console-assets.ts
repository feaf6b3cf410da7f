// The console's built files (ui/build/client: its scripts, styles and favicon), served in front of the console's
// own handler. adapter-node serves them with sirv, which lists the folder once, when the handler loads, and streams
// a listed file without listening for the stream's errors: rebuilding the console while the web process runs
// (`npm run build:ui` beside `npm start`) removes files it listed, and the next request for one threw ENOENT out of
// the stream and took the process down. Here a file is opened when it is asked for, in the precompressed form the
// browser accepts if that is there now (else the file itself), and a file that is gone is a 404; the console's
// handler is handed only paths that were no file of the folder when it loaded, so its sirv never opens one.
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream';
import type { RequestHandler, Response } from 'express';
import { ApiError } from './problem';

/** The precompressed forms adapter-node writes beside each file, best first. */
const precompressed = [
  { suffix: '.br', encoding: 'br', accepted: /\bbr\b/i },
  { suffix: '.gz', encoding: 'gzip', accepted: /\bgzip\b/i },
];

/** What an open attempt meets when the file is not there (or the path cannot name one). */
const missing = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG']);

/** The URL paths (/_app/immutable/…) of the files under `dir` now. */
function filesUnder(dir: string): Set<string> {
  const files = new Set<string>();
  if (!fs.existsSync(dir)) return files;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile())
      files.add(`/${path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/')}`);
  return files;
}

/** The file opened, with its size and time, or undefined when it is not there (a directory is no file either). */
async function openFile(file: string): Promise<{ handle: FileHandle; stats: fs.Stats } | undefined> {
  let handle: FileHandle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch (err) {
    if (missing.has((err as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw err;
  }
  const stats = await handle.stat();
  if (stats.isFile()) return { handle, stats };
  await handle.close();
  return undefined;
}

/**
 * The console's handler with its built files served first, from `clientDir` as it is at each request.
 * `immutablePrefix` is where the build puts its content-hashed files, cached for a year (as adapter-node does).
 */
export function consoleWithAssets(
  clientDir: string,
  consoleHandler: RequestHandler,
  immutablePrefix = '/_app/immutable/',
): RequestHandler {
  const root = path.resolve(clientDir);
  const listedAtLoad = filesUnder(root);

  async function serve(pathname: string, acceptEncoding: string, method: string, res: Response): Promise<boolean> {
    const file = path.join(root, pathname);
    const forms = [...precompressed.filter((p) => p.accepted.test(acceptEncoding)), { suffix: '', encoding: '' }];
    for (const { suffix, encoding } of forms) {
      const opened = await openFile(file + suffix);
      if (!opened) continue;
      // Open, the file is read to its end even if a rebuild removes it now.
      const { handle, stats } = opened;
      const etag = `W/"${stats.size}-${stats.mtime.getTime()}"`;
      res.vary('Accept-Encoding');
      if (res.req.headers['if-none-match'] === etag) {
        await handle.close();
        res.status(304).end();
        return true;
      }
      res.type(path.extname(pathname) || 'application/octet-stream');
      res.set({ 'Content-Length': String(stats.size), 'Last-Modified': stats.mtime.toUTCString(), ETag: etag });
      if (encoding) res.set('Content-Encoding', encoding);
      if (pathname.startsWith(immutablePrefix)) res.set('Cache-Control', 'public,max-age=31536000,immutable');
      if (method === 'HEAD') {
        await handle.close();
        res.end();
        return true;
      }
      // A reader gone mid-way (the browser navigated on) ends the stream; the handle closes with it.
      pipeline(handle.createReadStream(), res, () => {});
      return true;
    }
    return false;
  }

  return (req, res, next) => {
    let pathname: string;
    try {
      pathname = decodeURIComponent(req.path);
    } catch {
      return consoleHandler(req, res, next); // not a path any file has
    }
    // Every file of the build has an extension (.js, .css, .svg, version.json); a page's path (/agents/…) goes to
    // the console without trying to open files for it.
    if (!path.extname(pathname)) return consoleHandler(req, res, next);
    const inside = path.join(root, pathname).startsWith(root + path.sep);
    if (!inside || pathname.includes('\0') || pathname.split('/').some((part) => part.startsWith('.')))
      return consoleHandler(req, res, next);
    serve(pathname, req.headers['accept-encoding'] ?? '', req.method, res)
      .then((served) => {
        if (served) return;
        const wasAFile = ['', ...precompressed.map((p) => p.suffix)].some((s) => listedAtLoad.has(pathname + s));
        if (wasAFile)
          throw new ApiError(
            404,
            'not_found',
            `${pathname} is no longer in the console's build (it was rebuilt): reload the page`,
          );
        return consoleHandler(req, res, next);
      })
      .catch(next);
  };
}
