// The short-lived steps of `npm start` (scripts/prepare.ts), run as the supervisor runs them: a process whose last
// line on stdout is its JSON answer. The supervisor reads its configuration through the `config` step, so a wrong
// variable must come back as the one line that names it, not as a stack.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nodeScript } from '../../node-script';
import type { StartConfig } from '../../scripts/prepare';

/** Runs a step with only `env` (and PATH) set: the answer, the exit code and what went to stderr. */
function runStep(step: string, env: Record<string, string>) {
  const [node, args] = nodeScript(require.resolve('../../scripts/prepare'), step);
  const r = spawnSync(node, args, { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
  const last = r.stdout.trimEnd().split('\n').pop() ?? '';
  return { answer: JSON.parse(last) as { done?: unknown; error?: string }, code: r.status, stderr: r.stderr };
}

describe('scripts/prepare.ts: the start-time steps', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-prepare-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('config answers what the supervisor needs, read from the environment', () => {
    const { answer, code } = runStep('config', {
      CADRE_DATA_DIR: dir,
      CADRE_WEB_PORT: '4123',
      CADRE_DB_PORT: '4124',
      CADRE_TEMPORAL_PORT: '4125',
      CADRE_TEMPORAL_UI_PORT: '4126',
    });
    assert.equal(code, 0);
    const config = answer.done as StartConfig;
    assert.equal(config.dataDir, dir);
    assert.deepEqual(config.web, { port: 4123, publicUrl: 'http://localhost:4123' });
    assert.deepEqual(config.db, { embedded: true, embeddedPort: 4124, embeddedDir: path.join(dir, 'pglite') });
    assert.equal(config.temporal.embedded, true);
    assert.equal(config.temporal.address, '127.0.0.1:4125');
    assert.equal(config.temporal.uiUrl, 'http://localhost:4126');
    assert.equal(config.temporal.embeddedUiPort, 4126);
    assert.equal(config.temporal.searchAttributes.CadreAgentId, 'Keyword');
  });

  it('config says which variable is wrong in one line, with exit code 1', () => {
    const { answer, code, stderr } = runStep('config', { CADRE_DATA_DIR: dir, CADRE_WEB_PORT: 'eighty' });
    assert.equal(code, 1);
    assert.match(answer.error!, /^CADRE_WEB_PORT: .*\(got "eighty"\)$/);
    assert.doesNotMatch(answer.error!, /\n/);
    assert.equal(stderr.trim(), '', 'no stack trace');
  });

  it('config tells an external Postgres from the embedded one', () => {
    const { answer } = runStep('config', { CADRE_DATA_DIR: dir, DATABASE_URL: 'postgres://u@db.internal:5432/cadre' });
    assert.equal((answer.done as StartConfig).db.embedded, false);
  });

  it('an unknown step is refused in one line', () => {
    const { answer, code } = runStep('toString', {});
    assert.equal(code, 2);
    assert.equal(answer.error, 'scripts/prepare: unknown step "toString"');
  });
});
