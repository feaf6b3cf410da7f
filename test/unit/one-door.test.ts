// Every door reaches services/runs/start.ts: checked over the source, so a new way to start a run cannot go around
// the door's decisions. Only the door opens a run (db/open-run.ts's openers), only its dispatch sends a run
// workflow's start from a client, and a workflow starts its run children as the current run type (an older type
// only behind the patch that keeps its recorded histories replaying).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const layers = ['model', 'db', 'services', 'workflows', 'activities', 'schedules', 'api', 'scripts', 'bench'];

function sourceFiles(): string[] {
  return layers.flatMap((dir) =>
    fs.existsSync(path.join(root, dir))
      ? fs
          .readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
          .flatMap((e) =>
            e.isFile() && e.name.endsWith('.ts') ? [path.relative(root, path.join(e.parentPath, e.name))] : [],
          )
      : [],
  );
}

const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

describe('one door to start a run (services/runs/start.ts)', () => {
  const files = sourceFiles();

  it('no file but the door imports the openers of db/open-run.ts', () => {
    const openers = /import\s*\{([^}]*)\}\s*from\s*'[./]*db\/open-run'/g;
    const importers = files.filter((file) =>
      [...read(file).matchAll(openers)].some((m) => /\b(openRun|openSkippedRun)\b/.test(m[1])),
    );
    assert.deepEqual(importers, ['services/runs/start.ts']);
  });

  it("no file but the door's dispatch starts a run workflow from a client", () => {
    const runStart =
      /workflow\.(start|execute|signalWithStart)\s*(<[^>]*>)?\s*\(\s*('agentRun\w*'|currentRunType|agentRun\w*\b)/g;
    const starters = files.filter((file) => runStart.test(read(file)));
    assert.deepEqual(starters, ['services/runs/dispatch.ts']);
  });

  it('workflows start their run children as the current type, an older one only behind the patch', () => {
    const children = files
      .filter((file) => file.startsWith('workflows/'))
      .flatMap((file) =>
        [...read(file).matchAll(/(startChild|executeChild)\s*(<[^>]*>)?\s*\(\s*([^,]+),/g)].map(
          (m) => `${file}: ${m[3].trim()}`,
        ),
      );
    const runChildren = children.filter((c) => /agentRun|currentRunType|type\b/.test(c.split(': ')[1]));
    assert.ok(runChildren.length >= 5, runChildren.join('\n'));
    for (const child of runChildren) {
      const [file, type] = child.split(': ');
      const text = read(file);
      if (type.includes('currentRunType')) continue;
      // A name bound just above from the patch's choice (`const type = patched(...) ? currentRunType : 'agentRun'`).
      const bound = new RegExp(`const ${type} = patched\\(currentRunTypePatch\\) \\? currentRunType : 'agentRun'`);
      const chained = type.startsWith('current ? agentRunV3') && /patched\(currentRunTypePatch\)/.test(text);
      assert.ok(bound.test(text) || chained, `${child} starts a run child as another type than the current one`);
    }
  });
});
