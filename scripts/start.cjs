// `npm start`: builds the server code when dist/ is missing or older than its sources (a fresh clone, a pull, an
// edit), then runs the compiled supervisor (dist/scripts/start.js) in this same process. Plain node and compiled
// JavaScript for the supervisor and every child: no TypeScript loader in memory.
// The build runs in a child process of its own (`node scripts/build.cjs`): this process goes on as the supervisor
// for as long as Cadre runs, and glibc would keep the memory esbuild's compile took here (about 300 MB).
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { staleReason } = require('./build.cjs');

// Only a look at file times here; `node scripts/build.cjs` looks again and says why it builds.
if (staleReason(path.resolve(__dirname, '..'))) {
  const build = spawnSync(process.execPath, [path.join(__dirname, 'build.cjs')], { stdio: 'inherit' });
  if (build.status !== 0) {
    // It has said what failed (esbuild: with file and line), unless it could not run or was killed.
    if (build.status === null)
      console.error(`cadre: building the server code failed: ${build.error ? build.error.message : build.signal}`);
    process.exit(1);
  }
}
require('../dist/scripts/start.js');
