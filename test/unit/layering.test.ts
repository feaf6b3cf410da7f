// The layers of DESIGN.md ("Top-level layout"), checked over the import graph of every source file, the console's
// .svelte files included: model/ is pure; the store never reaches up; workflow code imports only workflows/ and
// model/ (activities as types, which the bundler erases); nothing outside the sandbox imports a workflow's values
// except through workflows/contracts.ts; the API is HTTP over services/; the console never reaches into db/; and
// no two modules import each other, directly or round a circle, other than the workflow → activities type import.
//
// LAYERING_ROOT=/path/to/a/checkout runs the same rules over another tree (how the rules were seen to fail on the
// tree before issue 32).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.env.LAYERING_ROOT ?? path.resolve(__dirname, '../..'));
const layers = ['model', 'db', 'schedules', 'services', 'workflows', 'activities', 'api', 'scripts', 'ui'] as const;
type Layer = (typeof layers)[number];

/** The one workflows/ module the rest of the code may take values from: signals, updates, queries, workflow ids. */
const contracts = 'workflows/contracts.ts';

/**
 * What each layer may not import. `typeOnly` layers may be imported with `import type` only (erased at build);
 * `contractsOnly` marks a layer that may take values from workflows/ through workflows/contracts.ts alone.
 */
const rules: Record<Layer, { never: Layer[]; typeOnly?: Layer[]; contractsOnly?: boolean }> = {
  model: { never: ['db', 'schedules', 'services', 'workflows', 'activities', 'api', 'scripts', 'ui'] },
  db: { never: ['schedules', 'services', 'workflows', 'activities', 'api', 'scripts', 'ui'] },
  schedules: { never: ['services', 'activities', 'api', 'scripts', 'ui'], contractsOnly: true },
  services: { never: ['activities', 'api', 'scripts', 'ui'], contractsOnly: true },
  workflows: { never: ['db', 'schedules', 'services', 'api', 'scripts', 'ui'], typeOnly: ['activities'] },
  activities: { never: ['api', 'scripts', 'ui'], contractsOnly: true },
  api: { never: ['activities', 'scripts', 'ui'], contractsOnly: true },
  scripts: { never: ['ui'] },
  ui: { never: ['db', 'schedules', 'services', 'workflows', 'activities', 'scripts'] },
};

/** How the console's aliases (ui/svelte.config.js, SvelteKit's $lib) map to folders of the repository. */
const aliases: Record<string, string> = { $lib: 'ui/src/lib', $api: 'api', $db: 'db' };

function sourceFiles(dir: string): string[] {
  if (!fs.existsSync(path.join(root, dir))) return [];
  return fs
    .readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|svelte)$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .filter((file) => !file.split(path.sep).some((part) => part === 'node_modules' || part.startsWith('.')));
}

interface Arrow {
  from: string;
  spec: string;
  /** The imported file (repository-relative), or the path it names when no such file exists. */
  to: string;
  typeOnly: boolean;
}

/** `import type {…}` and `import { type A, type B }` are erased at build; anything else is a value import. */
function isTypeOnly(keyword: string | undefined, clause: string): boolean {
  if (keyword) return true;
  const braces = /^\s*\{([^}]*)\}\s*$/.exec(clause);
  if (!braces) return false;
  const names = braces[1].split(',').filter((n) => n.trim() !== '');
  return names.length > 0 && names.every((n) => /^\s*type\s/.test(n));
}

function resolveSpec(from: string, spec: string): string | undefined {
  let target: string;
  if (spec.startsWith('.')) target = path.join(path.dirname(from), spec);
  else {
    const alias = Object.keys(aliases).find((a) => spec === a || spec.startsWith(`${a}/`));
    if (!alias) return undefined; // a package
    target = path.join(aliases[alias], spec.slice(alias.length));
  }
  target = path.normalize(target).replace(/\.js$/, '');
  const candidates = [target, `${target}.ts`, path.join(target, 'index.ts')];
  return (
    candidates.find((c) => fs.existsSync(path.join(root, c)) && fs.statSync(path.join(root, c)).isFile()) ?? target
  );
}

/** Every module a file imports or re-exports (relative or through a console alias), and whether only as a type. */
function arrowsOf(file: string): Arrow[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const found: Arrow[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    const to = resolveSpec(file, spec);
    if (to) found.push({ from: file, spec, to, typeOnly });
  };
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?([^;'"]*?)\s+from\s+['"]([^'"]+)['"]/gm)) {
    add(m[3], isTypeOnly(m[1], m[2]));
  }
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) add(m[1], false);
  for (const m of text.matchAll(/(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g)) add(m[1], false);
  return found;
}

function layerOf(file: string): Layer | undefined {
  return layers.find((l) => file === l || file.startsWith(`${l}/`));
}

/** Why an arrow is forbidden, or undefined when it is allowed. */
function breach({ from, to, typeOnly }: Arrow): string | undefined {
  const source = layerOf(from);
  const target = layerOf(to);
  if (!source || !target || source === target) return undefined;
  const rule = rules[source];
  if (rule.never.includes(target)) return `${source} → ${target}`;
  if (!typeOnly && rule.typeOnly?.includes(target)) return `${source} → ${target} values`;
  if (target === 'workflows' && !typeOnly && to !== contracts && rule.contractsOnly) {
    return `${source} → workflow values outside ${contracts}`;
  }
  return undefined;
}

/** The one circle DESIGN.md allows: a workflow proxies its activities by type, and activities use the contracts. */
const allowedInCircle = (a: Arrow) => a.typeOnly && layerOf(a.from) === 'workflows' && layerOf(a.to) === 'activities';

/** Strongly connected components of more than one file (Tarjan), each sorted; these are the import circles. */
function circles(arrows: Arrow[]): string[][] {
  const next = new Map<string, string[]>();
  for (const a of arrows) {
    if (allowedInCircle(a) || a.from === a.to) continue;
    next.set(a.from, [...(next.get(a.from) ?? []), a.to]);
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('layering (DESIGN.md)', () => {
  const files = layers.flatMap(sourceFiles);
  const arrows = files.flatMap(arrowsOf);
  const breaches = arrows.flatMap((a) => {
    const why = breach(a);
    return why ? [`${a.from} imports ${a.spec}${a.typeOnly ? ' (type)' : ''}: ${why}`] : [];
  });

  it('reads the import graph of every layer', () => {
    assert.ok(files.length > 100 && arrows.length > files.length, `${files.length} files, ${arrows.length} imports`);
    assert.ok(
      files.some((f) => f.endsWith('.svelte')),
      'the console components are read too',
    );
  });

  it('no layer imports one it may not', () => {
    assert.deepEqual(breaches, []);
  });

  it('no import circle other than the workflow → activities type import', () => {
    assert.deepEqual(circles(arrows), []);
  });

  it('workflows/contracts.ts imports nothing at run time but the SDK, so a caller takes it without workflow code', () => {
    assert.ok(fs.existsSync(path.join(root, contracts)), `${contracts} holds the signals, updates, queries and ids`);
    const text = fs.readFileSync(path.join(root, contracts), 'utf8');
    const imports = [...text.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms)].map((m) => ({
      spec: m[2],
      typeOnly: m[1] !== undefined,
    }));
    assert.deepEqual(
      imports.filter(({ spec, typeOnly }) =>
        typeOnly ? !spec.startsWith('../model/') : spec !== '@temporalio/workflow',
      ),
      [],
    );
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
