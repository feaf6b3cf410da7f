// `npm start`: builds the server code when dist/ is missing or older than its sources (a fresh clone, a pull, an
// edit), then runs the compiled supervisor (dist/scripts/start.js) in this same process. Plain node and compiled
// JavaScript for the supervisor and every child: no TypeScript loader in memory, and no second process here.
'use strict';
const { ensureBuilt } = require('./build.cjs');

try {
  ensureBuilt();
} catch (err) {
  // esbuild has printed what it could not compile, with file and line.
  console.error(`cadre: building the server code failed: ${err.message.split('\n')[0]}`);
  process.exit(1);
}
require('../dist/scripts/start.js');
