// Compiles Cadre's TypeScript to CommonJS JavaScript in dist/, keeping the tree (scripts/start.ts becomes
// dist/scripts/start.js), so that `npm start`, the CLI and the production images run plain `node` with no
// TypeScript loader in memory. esbuild transpiles each file on its own, without bundling and without type checking
// (`tsc --noEmit` checks). The whole build, workflow bundle included, took 1.8 CPU seconds; tsc's emit, the other
// way, needs its type check first, which alone took 27 CPU seconds on the same machine.
// It also makes the worker's workflow bundle once, ahead of time (dist/workflow-bundle.js), instead of at every worker
// start. Tests keep running the sources through tsx (.mocharc.cjs).
//
//   node scripts/build.cjs            builds when dist/ is missing or older than a source, else does nothing
//   node scripts/build.cjs --force    builds anyway
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
/** Where the code of the processes lives (tsconfig.json's list without test/ and bench/); ui/ is built by Vite. */
const sourceDirs = ['activities', 'api', 'db', 'model', 'schedules', 'scripts', 'services', 'workflows'];
/** The workflow bundle without interceptor modules (tracing off), which scripts/worker.ts loads instead of bundling. */
const workflowBundle = 'workflow-bundle.js';

/** The TypeScript sources to compile, relative to `base`, sorted. */
function sourceFiles(base) {
  const files = fs.readdirSync(base).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  for (const dir of sourceDirs) {
    if (!fs.existsSync(path.join(base, dir))) continue;
    for (const entry of fs.readdirSync(path.join(base, dir), { withFileTypes: true, recursive: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      files.push(path.relative(base, path.join(entry.parentPath ?? entry.path, entry.name)));
    }
  }
  return files.sort();
}

/**
 * Why dist/ under `base` must be built again, or undefined when it is current: it is missing, a source is newer than
 * it, or a source was added or removed since (its stamp lists the files it was built from).
 */
function staleReason(base, files = sourceFiles(base)) {
  const stamp = path.join(base, 'dist', '.built.json');
  let built;
  try {
    built = { at: fs.statSync(stamp).mtimeMs, files: JSON.parse(fs.readFileSync(stamp, 'utf8')).files };
  } catch {
    return 'dist/ is missing';
  }
  if (built.files.join('\n') !== files.join('\n')) return 'sources were added or removed';
  const newer = files.find((f) => fs.statSync(path.join(base, f)).mtimeMs > built.at);
  return newer && `${newer} changed`;
}

/**
 * Compiles every source of `base` into a new folder and then puts it in place of dist/ in two renames, so a process
 * starting meanwhile (another `npm start`, the CLI) never loads a half-written tree.
 */
function build(base) {
  const files = sourceFiles(base);
  const outDir = path.join(base, 'dist');
  const next = `${outDir}.next-${process.pid}`;
  const old = `${outDir}.old-${process.pid}`;
  fs.rmSync(next, { recursive: true, force: true });
  const esbuild = require('esbuild');
  esbuild.buildSync({
    absWorkingDir: base,
    entryPoints: files,
    outdir: next,
    outbase: '.',
    format: 'cjs',
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    // For `node --enable-source-maps` when a stack trace should name TypeScript lines; unread otherwise.
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  // The sync API leaves esbuild's service process running (about 110 MB) for later calls; there are none, and this
  // process may go on as the CLI (scripts/cadre.cjs).
  esbuild.stop();
  fs.writeFileSync(path.join(next, '.built.json'), JSON.stringify({ files }) + '\n');
  try {
    fs.renameSync(outDir, old);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err; // no dist/ yet, or another build is swapping its own in
  }
  try {
    fs.renameSync(next, outDir);
  } catch (err) {
    // Another process built the same sources and put its dist/ in place first: keep that one.
    if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    fs.rmSync(next, { recursive: true, force: true });
  }
  fs.rmSync(old, { recursive: true, force: true });
  bundleWorkflows(outDir);
}

/**
 * scripts/bundle-workflows.ts compiled, on the compiled workflows in their final place (the bundle names its modules
 * by path): 1-2 s of CPU saved at each worker start. Until it is there a worker bundles for itself.
 */
function bundleWorkflows(outDir) {
  const bundle = require('node:child_process').execFileSync(
    process.execPath,
    [path.join(outDir, 'scripts/bundle-workflows.js')],
    { maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const file = path.join(outDir, workflowBundle);
  fs.writeFileSync(`${file}.${process.pid}`, bundle);
  fs.renameSync(`${file}.${process.pid}`, file);
}

/** Builds dist/ under `base` when it is stale (saying so on stderr); the launchers call this before loading it. */
function ensureBuilt(base = root) {
  const reason = staleReason(base);
  if (!reason) return false;
  console.error(`building the server code (dist/: ${reason})…`);
  build(base);
  return true;
}

module.exports = { ensureBuilt, staleReason, build, sourceFiles };

// `npm start` runs this as a child (scripts/start.cjs), so that the supervisor never holds what the build took.
if (require.main === module) {
  try {
    if (process.argv.includes('--force')) build(root);
    else ensureBuilt(root);
  } catch (err) {
    // esbuild has printed what it could not compile, with file and line.
    console.error(`cadre: building the server code failed: ${err.message.split('\n')[0]}`);
    process.exit(1);
  }
}
