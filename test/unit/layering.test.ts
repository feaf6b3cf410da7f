// The layers of DESIGN.md, checked on every import of every source file: model/ is pure and imports no other
// layer; the store never reaches up into the API, the workflows or the activities; workflow code never touches the
// store or the API (activities only as types, which the bundler erases); activities never call into the API; schedule
// management sits outside the API so both it and the activities can use it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const layers = ['model', 'db', 'workflows', 'activities', 'schedules', 'api', 'scripts', 'ui'] as const;
type Layer = (typeof layers)[number];

/** What each layer may not import; `typeOnly` ones are allowed as `import type` (erased at build). */
const forbidden: Partial<Record<Layer, { never: Layer[]; typeOnly?: Layer[] }>> = {
  model: { never: ['db', 'workflows', 'activities', 'schedules', 'api', 'scripts', 'ui'] },
  db: { never: ['workflows', 'activities', 'schedules', 'api', 'scripts', 'ui'] },
  workflows: { never: ['db', 'schedules', 'api', 'scripts', 'ui'], typeOnly: ['activities'] },
  activities: { never: ['api', 'scripts', 'ui'] },
  schedules: { never: ['activities', 'api', 'scripts', 'ui'], typeOnly: ['workflows'] },
  api: { never: ['scripts', 'ui'] },
};

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(path.join(root, dir))) return [];
  return fs
    .readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
    .flatMap((e) =>
      e.isFile() && e.name.endsWith('.ts') ? [path.relative(root, path.join(e.parentPath, e.name))] : [],
    );
}

/** Every relative module specifier a file imports or re-exports, and whether it is type-only. */
function importsOf(file: string): { spec: string; typeOnly: boolean }[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const found: { spec: string; typeOnly: boolean }[] = [];
  for (const m of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+'(\.[^']+)'/gms)) {
    found.push({ spec: m[3], typeOnly: m[2] !== undefined });
  }
  for (const m of text.matchAll(/(?:import\(|require\()\s*'(\.[^']+)'/g)) found.push({ spec: m[1], typeOnly: false });
  return found;
}

function layerOf(file: string): Layer | undefined {
  return layers.find((l) => file === l || file.startsWith(`${l}/`));
}

describe('layering (DESIGN.md)', () => {
  const violations: string[] = [];
  for (const layer of Object.keys(forbidden) as Layer[]) {
    for (const file of sourceFiles(layer)) {
      for (const { spec, typeOnly } of importsOf(file)) {
        const target = layerOf(path.relative(root, path.resolve(root, path.dirname(file), spec)));
        if (!target || target === layer) continue;
        const rule = forbidden[layer]!;
        if (rule.never.includes(target) || (!typeOnly && rule.typeOnly?.includes(target))) {
          violations.push(`${file} imports ${spec}${typeOnly ? ' (type)' : ''}: ${layer} → ${target}`);
        }
      }
    }
  }

  it('no layer imports one it may not', () => {
    assert.deepEqual(violations, []);
  });

  it('model/ imports no Node built-in (it runs in the workflow sandbox too)', () => {
    const builtins = sourceFiles('model').flatMap((file) =>
      [...fs.readFileSync(path.join(root, file), 'utf8').matchAll(/from\s+'(node:[^']+)'/g)].map(
        (m) => `${file}: ${m[1]}`,
      ),
    );
    assert.deepEqual(builtins, []);
  });
});
