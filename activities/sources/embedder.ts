// Text embeddings for vector retrieval: all-MiniLM-L6-v2 (384 dimensions, int8 ONNX) run locally with
// @huggingface/transformers on onnxruntime-node, from the files scripts/embedding-model.ts installs into
// .models/ — remote model loading is switched off, so nothing is downloaded at run time. Without those files, or
// with CADRE_EMBEDDINGS=off, there is no embedder and retrieval is full-text only.
import fs from 'node:fs';
import path from 'node:path';
import { embeddingDimensions } from '../../db/migrations/008_sources';

export interface Embedder {
  readonly model: string;
  embed(texts: string[]): Promise<number[][]>;
}

const modelId = 'all-MiniLM-L6-v2';
const modelsDir = path.resolve(__dirname, '..', '..', '.models');
const batchSize = 32;

let loading: Promise<Embedder | null> | undefined;
let warned = false;

export function embeddingsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CADRE_EMBEDDINGS !== 'off';
}

export function embeddingModelPresent(): boolean {
  return fs.existsSync(path.join(modelsDir, modelId, 'onnx', 'model_quantized.onnx'));
}

export function loadEmbedder(): Promise<Embedder | null> {
  if (!embeddingsEnabled()) return Promise.resolve(null);
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
