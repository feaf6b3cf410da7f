// Text embeddings for vector retrieval. By default all-MiniLM-L6-v2 (384 dimensions, int8 ONNX) run locally with
// @huggingface/transformers on onnxruntime-node, from the files scripts/embedding-model.ts installs into
// .models/ — remote model loading is switched off, so nothing is downloaded at run time. Without those files, or
// with CADRE_EMBEDDINGS=off, there is no embedder and retrieval is full-text only. CADRE_EMBEDDINGS=voyage uses
// Voyage AI instead (VOYAGE_API_KEY; voyage-embedder.ts).
import fs from 'node:fs';
import path from 'node:path';
import { embeddingDimensions } from '../../db/migrations/008_sources';
import { repoRoot } from '../../repo-root';
import { voyageEmbedder } from './voyage-embedder';
import type { Embedder } from './embedding';

export type EmbeddingProvider = 'local' | 'voyage' | 'off';

const modelId = 'all-MiniLM-L6-v2';
const modelsDir = path.join(repoRoot, '.models');
const batchSize = 32;

let loading: Promise<Embedder | null> | undefined;
let warned = false;

export function embeddingProvider(env: NodeJS.ProcessEnv = process.env): EmbeddingProvider {
  const p = env.CADRE_EMBEDDINGS || 'local';
  if (p !== 'local' && p !== 'voyage' && p !== 'off')
    throw new Error(`CADRE_EMBEDDINGS must be local, voyage or off, not "${p}"`);
  return p;
}

export function embeddingsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return embeddingProvider(env) !== 'off';
}

let voyage: { key: string; embedder: Embedder } | undefined;

export function embeddingModelPresent(): boolean {
  return fs.existsSync(path.join(modelsDir, modelId, 'onnx', 'model_quantized.onnx'));
}

/** The configured embedder, read from the environment at each call (the worker and the API share this). */
export function loadEmbedder(env: NodeJS.ProcessEnv = process.env): Promise<Embedder | null> {
  const provider = embeddingProvider(env);
  if (provider === 'off') return Promise.resolve(null);
  if (provider === 'voyage') {
    if (!env.VOYAGE_API_KEY) throw new Error('CADRE_EMBEDDINGS=voyage needs VOYAGE_API_KEY');
    const settings = {
      apiKey: env.VOYAGE_API_KEY,
      model: env.VOYAGE_MODEL || 'voyage-3.5',
      baseUrl: env.VOYAGE_BASE_URL || 'https://api.voyageai.com/v1',
    };
    const key = JSON.stringify(settings);
    if (voyage?.key !== key) voyage = { key, embedder: voyageEmbedder(settings) };
    return Promise.resolve(voyage.embedder);
  }
  if (!embeddingModelPresent()) {
    if (!warned) {
      warned = true;
      console.warn(
        `vector retrieval is off: the embedding model is not installed (node --import tsx scripts/embedding-model.ts); full-text retrieval works`,
      );
    }
    return Promise.resolve(null);
  }
  loading ??= start().catch((err) => {
    loading = undefined;
    throw err;
  });
  return loading;
}

async function start(): Promise<Embedder> {
  const hf = await import('@huggingface/transformers');
  hf.env.allowRemoteModels = false;
  hf.env.allowLocalModels = true;
  hf.env.localModelPath = `${modelsDir}${path.sep}`;
  const extract = await hf.pipeline('feature-extraction', modelId, { dtype: 'q8', device: 'cpu' });
  return {
    model: `${modelId} (int8)`,
    column: 'embedding',
    minSimilarity: 0.2, // all-MiniLM-L6-v2 puts unrelated texts near 0
    async embed(texts: string[]): Promise<number[][]> {
      const out: number[][] = [];
      for (let i = 0; i < texts.length; i += batchSize) {
        const tensor = await extract(texts.slice(i, i + batchSize), { pooling: 'mean', normalize: true });
        const vectors = tensor.tolist() as number[][];
        if (vectors[0]?.length !== embeddingDimensions)
          throw new Error(`the embedding model answered ${vectors[0]?.length} dimensions, not ${embeddingDimensions}`);
        out.push(...vectors);
      }
      return out;
    },
  };
}
