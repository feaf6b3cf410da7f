// A page's picture for opening a citation. Pictures of scans and images are kept at indexing (they were drawn
// for OCR anyway); a text PDF page is drawn the first time someone opens a citation on it, then kept.
import type { Knex } from 'knex';
import { getPageImage } from '../../db/sources';
import { renderPdfPage } from './extract-pdf';

export async function pagePicture(knex: Knex, documentId: string, page: number): Promise<Buffer | undefined> {
  const kept = await getPageImage(knex, documentId, page);
  if (kept) return kept;
  const doc = await knex('source_documents').where({ id: documentId }).first('format', 'content');
  if (doc?.format !== 'pdf' || !doc.content) return undefined;
  const picture = await renderPdfPage(doc.content, page);
  await knex('source_pages').where({ document_id: documentId, page }).update({ image: picture });
  return picture;
}
