// What retrieval and indexing need of an embedding model, local (./embedder.ts) or remote (./voyage-embedder.ts):
// in a module of its own so each implementation can name it without importing the other.
export interface Embedder {
  readonly model: string;
  /** The passages column holding this embedder's vectors: their dimensions fix the column. */
  readonly column: 'embedding' | 'embedding_voyage';
  /** Below this cosine similarity a passage is taken as unrelated to the query. */
  readonly minSimilarity: number;
  /** Some models embed a search query differently from the documents searched. */
  embed(texts: string[], purpose?: 'document' | 'query'): Promise<number[][]>;
}
