// When `npm start` and `npx cadre` compile the server code again (scripts/build.cjs): whenever dist/ no longer matches
// the sources, and only then. Checked on a small tree of its own; test/e2e/stack.test.ts runs the real build and start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain-JS launcher module, run before any build
const { staleReason } = require('../../scripts/build.cjs') as { staleReason: (base: string) => string | undefined };

describe('scripts/build.cjs: when dist/ is built again', () => {
  let base: string;
  const write = (file: string, text = 'export const x = 1;\n') => {
    fs.mkdirSync(path.dirname(path.join(base, file)), { recursive: true });
    fs.writeFileSync(path.join(base, file), text);
  };
  const age = (file: string, secondsAgo: number) => {
    const t = new Date(Date.now() - secondsAgo * 1000);
    fs.utimesSync(path.join(base, file), t, t);
  };
  /** A dist/ as a build of the tree's current sources leaves it, made after them. */
  const built = () => {
    const files = ['cadre.config.ts', 'model/plan.ts', 'scripts/start.ts'];
    for (const f of files) age(f, 60);
    write('dist/.built.json', JSON.stringify({ files }));
  };

  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-build-test-'));
    write('cadre.config.ts');
    write('model/plan.ts');
    write('scripts/start.ts');
    write('test/unit/not-shipped.test.ts'); // tests are not compiled
    write('ui/src/app.d.ts'); // the console is Vite's
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  it('builds a tree that was never built', () => {
    assert.equal(staleReason(base), 'dist/ is missing');
  });

  it('does nothing when dist/ is newer than every source', () => {
    built();
    assert.equal(staleReason(base), undefined);
  });

  it('builds again after a source changed, naming it', () => {
    built();
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(path.join(base, 'model/plan.ts'), later, later);
    assert.equal(staleReason(base), 'model/plan.ts changed');
  });

  it('builds again after a source was added or removed, even an old one (a pull, a checkout)', () => {
    built();
    write('services/new-use-case.ts');
    age('services/new-use-case.ts', 3600);
    assert.equal(staleReason(base), 'sources were added or removed');
    fs.rmSync(path.join(base, 'services'), { recursive: true });
    fs.rmSync(path.join(base, 'model/plan.ts'));
    assert.equal(staleReason(base), 'sources were added or removed');
  });
});
