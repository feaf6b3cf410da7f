#!/usr/bin/env node
// `npx cadre …`: the operator CLI, compiled like the rest (scripts/build.cjs builds dist/ first when it is stale).
'use strict';
try {
  require('./build.cjs').ensureBuilt();
} catch (err) {
  console.error(`cadre: building the server code failed: ${err.message.split('\n')[0]}`);
  process.exit(1);
}
require('../dist/scripts/cli.js');
