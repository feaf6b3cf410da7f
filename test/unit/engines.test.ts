// The Node versions package.json's `engines` names are ones every installed dependency accepts: a dependency that
// needs a newer Node (as file-type 22 and OpenTelemetry 3 did) fails here, not on a newcomer's `npm install` as a
// page of EBADENGINE warnings, and the README's first lines (which repeat `engines`) stay true.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { repoRoot } from '../../repo-root';

interface Manifest {
  name?: string;
  version?: string;
  engines?: { node?: unknown };
}

function readManifest(file: string): Manifest | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest;
  } catch {
    return undefined; // a test fixture or a half-written file: not a package
  }
}

/** Every package under node_modules, nested ones included, with where it is. */
function installedPackages(dir: string): { where: string; manifest: Manifest }[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).flatMap((name) => {
    if (name.startsWith('.')) return [];
    const at = path.join(dir, name);
    if (name.startsWith('@')) return installedPackages(at);
    const manifest = readManifest(path.join(at, 'package.json'));
    const here = manifest ? [{ where: path.relative(repoRoot, at), manifest }] : [];
    return [...here, ...installedPackages(path.join(at, 'node_modules'))];
  });
}

describe('package.json engines', () => {
  const root = readManifest(path.join(repoRoot, 'package.json'))!;
  const ours = String(root.engines?.node ?? '');

  it('names Node versions', () => {
    assert.ok(semver.validRange(ours), `engines.node is not a version range: "${ours}"`);
  });

  it('names only Node versions every installed dependency accepts', () => {
    const refusing = installedPackages(path.join(repoRoot, 'node_modules'))
      .filter(({ manifest }) => typeof manifest.engines?.node === 'string' && semver.validRange(manifest.engines.node))
      .filter(({ manifest }) => !semver.subset(ours, manifest.engines!.node as string))
      .map(({ where, manifest }) => `${where}@${manifest.version}: node ${manifest.engines!.node as string}`);
    assert.deepEqual(refusing, [], `engines.node "${ours}" includes versions these refuse`);
  });
});
