// One entry point for every format: check what a document really is, count its pages, extract a range of them.
import { extractCsv, extractHtml, extractJson, extractMarkdown, extractPlainText, extractXml } from './extract-text';
import { extractDoc, extractDocx, extractPptx, extractWorkbook } from './extract-office';
import { extractImage } from './extract-image';
import { extractPdfPages, pdfPageCount } from './extract-pdf';
import { checkSignature, isImage, UnreadableDocumentError, type Format } from '../../services/sources/formats';
import type { Extraction } from './layout';

/**
 * Checks the content against its declared format and counts its units of work: the pages of a PDF or a TIFF,
 * one for everything else (read in one go).
 */
export async function inspect(fileName: string, format: Format, bytes: Buffer): Promise<number> {
  checkSignature(fileName, format, bytes);
  if (format === 'pdf') {
    const pages = await pdfPageCount(bytes);
    if (pages === 0) throw new UnreadableDocumentError(`${fileName} has no pages`);
    return pages;
  }
  if (format === 'tiff') {
    const { default: UTIF } = await import('utif2'); // loaded on first use
    try {
      return Math.max(1, UTIF.decode(bytes).length);
    } catch (err) {
      throw new UnreadableDocumentError(`${fileName} cannot be decoded as a TIFF image: ${(err as Error).message}`);
    }
  }
  return 1;
}

/** Extracts pages `from`..`to` of a PDF, or the whole of any other document. */
export async function extract(format: Format, bytes: Buffer, from: number, to: number): Promise<Extraction> {
  if (format === 'pdf') return extractPdfPages(bytes, from, to);
  if (isImage(format)) return extractImage(bytes, format);
  switch (format) {
    case 'txt':
      return extractPlainText(bytes);
    case 'md':
      return extractMarkdown(bytes);
    case 'csv':
      return extractCsv(bytes);
    case 'json':
      return extractJson(bytes);
    case 'xml':
      return extractXml(bytes);
    case 'html':
      return extractHtml(bytes);
    case 'docx':
      return extractDocx(bytes);
    case 'doc':
      return extractDoc(bytes);
    case 'xlsx':
    case 'xls':
      return extractWorkbook(bytes, format);
    case 'pptx':
      return extractPptx(bytes);
  }
}
