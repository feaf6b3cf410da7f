// Text embeddings for vector retrieval. Returns null when no embedding model is available, in which case
// retrieval is full-text only.
export interface Embedder {
  readonly model: string;
  embed(texts: string[]): Promise<number[][]>;
}

export async function loadEmbedder(): Promise<Embedder | null> {
  return null;
}
