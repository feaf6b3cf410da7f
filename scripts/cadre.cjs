#!/usr/bin/env node
// `npx cadre …`: the operator CLI, run through tsx so it needs no build step.
require('tsx/cjs');
require('./cli.ts');
