// Office files: Word (.docx with mammoth, read as HTML so that tables keep their rows; .doc with word-extractor),
// Excel (.xlsx and .xls with SheetJS; a sheet is a page, a row a paragraph) and PowerPoint (.pptx with
// officeparser; a slide is a page). An .docx/.xlsx/.pptx is a ZIP archive: every entry is inflated under a size
// cap first, so a zip bomb fails the source instead of filling the worker's memory. The parsers are loaded on first
// use: a service that never reads an office file does not hold them.
import type { WorkBook } from '@e965/xlsx';
import type { OfficeContentNode } from 'officeparser';
import * as yauzl from 'yauzl';
import { UnreadableDocumentError } from '../../services/sources/formats';
import { rowsToParagraphs } from './extract-text';
import { blockTexts, dom } from './html-blocks';
import type { Extraction, Paragraph } from './layout';

export const maxUnzippedBytes = 300 * 1024 * 1024;
const maxEntries = 20_000;

/** Inflates every entry, counting bytes; refuses archives that expand beyond the cap or lie about sizes. */
export async function checkZip(bytes: Buffer): Promise<void> {
  const bomb = () =>
    new UnreadableDocumentError(
      `the file expands to more than ${maxUnzippedBytes / 1024 / 1024} MB when unpacked (a "zip bomb", or a damaged file); it was not read`,
    );
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true, validateEntrySizes: true });
  } catch (err) {
    throw new UnreadableDocumentError(
      `the file is damaged: its ZIP structure cannot be read (${(err as Error).message})`,
    );
  }
  let total = 0;
  let count = 0;
  try {
    for await (const entry of zip.eachEntry()) {
      if (++count > maxEntries) throw bomb();
      if (total + entry.uncompressedSize > maxUnzippedBytes) throw bomb();
      if (entry.fileName.endsWith('/')) continue;
      const stream = await zip.openReadStreamPromise(entry);
      for await (const chunk of stream) {
        total += (chunk as Buffer).length;
        if (total > maxUnzippedBytes) {
          stream.destroy();
          throw bomb();
        }
      }
    }
  } catch (err) {
    if (err instanceof UnreadableDocumentError) throw err;
    throw new UnreadableDocumentError(`the file is damaged: ${(err as Error).message}`);
  } finally {
    zip.close();
  }
}

async function hasEntry(bytes: Buffer, name: string): Promise<boolean> {
  const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
  try {
    for await (const entry of zip.eachEntry()) if (entry.fileName === name) return true;
    return false;
  } finally {
    zip.close();
  }
}

const numbered = (texts: string[], page: number | null = null): Paragraph[] =>
  texts
    .map((t) => t.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .map((text, i) => ({ page, paragraph: i + 1, text }));

/** Blocks as paragraphs; the lines of a table's group of rows stay lines. */
const numberedBlocks = (texts: string[]): Paragraph[] =>
  texts.filter((t) => t.trim() !== '').map((text, i) => ({ page: null, paragraph: i + 1, text }));

export async function extractDocx(bytes: Buffer): Promise<Extraction> {
  await checkZip(bytes);
  if (!(await hasEntry(bytes, 'word/document.xml')))
    throw new UnreadableDocumentError('the file is named .docx but is not a Word document (no word/document.xml)');
  const { default: mammoth } = await import('mammoth');
  try {
    // As HTML, which keeps tables as tables; pictures are left out (they would come back as data URIs).
    const { value } = await mammoth.convertToHtml(
      { buffer: bytes },
      { convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: '' })) },
    );
    const body = dom(`<html><body>${value}</body></html>`).body;
    return { pages: [], paragraphs: numberedBlocks(body ? blockTexts(body) : []) };
  } catch (err) {
    throw new UnreadableDocumentError(`the Word document cannot be read: ${(err as Error).message}`);
  }
}

export async function extractDoc(bytes: Buffer): Promise<Extraction> {
  const { default: WordExtractor } = await import('word-extractor');
  try {
    const doc = await new WordExtractor().extract(bytes);
    return { pages: [], paragraphs: numbered(doc.getBody().split(/\r?\n+/)) };
  } catch (err) {
    const message = (err as Error).message;
    if (/encrypt/i.test(message))
      throw new UnreadableDocumentError('the Word document is password-protected; upload an unprotected copy');
    throw new UnreadableDocumentError(`the Word 97–2003 document cannot be read: ${message}`);
  }
}

/** Sheets are pages (in workbook order), rows are paragraphs numbered as the sheet numbers them. */
export async function extractWorkbook(bytes: Buffer, format: 'xlsx' | 'xls'): Promise<Extraction> {
  if (format === 'xlsx') await checkZip(bytes);
  // Its CommonJS build, as a static import loaded: the ES module build leaves out the codepage tables of .xls files.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const XLSX: typeof import('@e965/xlsx') = require('@e965/xlsx');
  let wb: WorkBook;
  try {
    wb = XLSX.read(bytes, { type: 'buffer', cellDates: true, dense: true });
  } catch (err) {
    const message = (err as Error).message;
    if (/password|encrypt/i.test(message))
      throw new UnreadableDocumentError('the workbook is password-protected; upload an unprotected copy');
    throw new UnreadableDocumentError(`the workbook cannot be read: ${message}`);
  }
  const out: Extraction = { pages: [], paragraphs: [] };
  wb.SheetNames.forEach((name, i) => {
    const sheet = wb.Sheets[name];
    const range = sheet['!ref'] ? XLSX.utils.decode_range(sheet['!ref']) : undefined;
    // Rows keep their sheet numbers even when the used range starts lower down.
    const rows = XLSX.utils.sheet_to_json<unknown[]>(sheet, { header: 1, blankrows: true, raw: false, defval: '' });
    const offset = range ? range.s.r : 0;
    const paragraphs = rowsToParagraphs(rows, i + 1, name).map((p) => ({ ...p, paragraph: p.paragraph + offset }));
    out.pages.push({ page: i + 1 });
    out.paragraphs.push(...paragraphs);
  });
  return out;
}

/** Slides are pages; each text paragraph of a slide (titles, bullets, notes) is a paragraph. */
export async function extractPptx(bytes: Buffer): Promise<Extraction> {
  await checkZip(bytes);
  const { OfficeParser } = await import('officeparser');
  let ast: Awaited<ReturnType<typeof OfficeParser.parseOffice>>;
  try {
    ast = await OfficeParser.parseOffice(bytes, { ocr: false, extractAttachments: false });
  } catch (err) {
    throw new UnreadableDocumentError(`the presentation cannot be read: ${(err as Error).message}`);
  }
  const out: Extraction = { pages: [], paragraphs: [] };
  const slides = ast.content.filter((n) => n.type === 'slide');
  slides.forEach((slide, i) => {
    const page = (slide.metadata as { slideNumber?: number } | undefined)?.slideNumber ?? i + 1;
    out.pages.push({ page });
    out.paragraphs.push(...numbered(paragraphTexts(slide), page));
  });
  return out;
}

function paragraphTexts(node: OfficeContentNode): string[] {
  if (node.type === 'paragraph' || node.type === 'heading') return [node.text ?? ''];
  return (node.children ?? []).flatMap(paragraphTexts);
}
