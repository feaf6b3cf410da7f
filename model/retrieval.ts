// A passage found in a workspace's sources, as the API's search and a retrieve node answer it, and what is asked
// for. Types only: the search itself (full text and vectors) is activities/sources/retrieval.ts.

/** A rectangle in page units (PDF points or image pixels), origin at the page's top-left corner. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface RetrievedPassage {
  passage_id: string;
  source: string;
  source_id: string;
  version: number;
  document: string;
  page: number | null;
  paragraph: number;
  part: number;
  text: string;
  boxes: Box[] | null;
  page_size: { width: number; height: number; unit: string } | null;
  ocr_confidence: number | null;
  score: number;
  citation_url: string;
}

export interface RetrieveRequest {
  workspaceId: string;
  sourceNames: string[];
  query: string;
  topK: number;
  /** The version in force at this moment is searched (a run's start); absent: the current versions. */
  asOf?: Date;
  publicUrl: string;
}
