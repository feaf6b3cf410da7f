// The remote embedding provider: Voyage AI's embeddings endpoint (POST {base}/embeddings with
// {input, model, input_type, output_dimension}). Voyage embeds a query and a document differently, so the caller
// says which it is. The base URL is configurable for a proxy, and for the tests' local fake.
import { voyageDimensions } from '../../db/migrations/011_voyage_embeddings';
import type { Embedder } from './embedding';
import { EmbeddingProviderError } from '../../services/adapters';

export interface VoyageSettings {
  apiKey: string;
  model: string;
  baseUrl: string;
}

/** Voyage takes up to 1,000 texts a request; smaller batches keep each under its token limit too. */
const batchSize = 128;

export function voyageEmbedder(settings: VoyageSettings): Embedder {
  const url = `${settings.baseUrl.replace(/\/+$/, '')}/embeddings`;
  return {
    model: `voyage:${settings.model}`,
    column: 'embedding_voyage',
    // Voyage's similarities of unrelated texts are not near 0 as MiniLM's are: no cut, rank fusion decides.
    minSimilarity: -1,
    async embed(texts, purpose = 'document') {
      const out: number[][] = [];
      for (let i = 0; i < texts.length; i += batchSize) {
        const input = texts.slice(i, i + batchSize);
        let res: Response;
        try {
          res = await fetch(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${settings.apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              input,
              model: settings.model,
              input_type: purpose,
              output_dimension: voyageDimensions,
            }),
          });
        } catch (err) {
          throw new EmbeddingProviderError(
            `Voyage AI embeddings at ${url} cannot be reached: ${(err as Error).message}`,
          );
        }
        const body = (await res.json().catch(() => null)) as {
          data?: { embedding: number[]; index: number }[];
          detail?: string;
        } | null;
        if (!res.ok || !body?.data)
          throw new EmbeddingProviderError(
            `Voyage AI embeddings failed (HTTP ${res.status}): ${body?.detail ?? 'no embeddings in the answer'}`,
          );
        const vectors = [...body.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
        if (vectors.length !== input.length || vectors.some((v) => v.length !== voyageDimensions))
          throw new EmbeddingProviderError(
            `Voyage AI answered ${vectors.length} embeddings of ${vectors[0]?.length} dimensions for ${input.length} texts; ${voyageDimensions} dimensions were asked`,
          );
        out.push(...vectors);
      }
      return out;
    },
  };
}
