// PDFs with pdf.js: the text layer with positions where there is one; pages without one (scans) are rendered
// with @napi-rs/canvas at 300 dpi and read by OCR. Boxes are in PDF points from the page's top-left corner.
import path from 'node:path';
import { UnreadableDocumentError } from '../../services/sources/formats';
import { paragraphsFromLines, scaleBox, type Extraction, type Line, type Paragraph } from './layout';
import { readPage, type Block, type TextRun } from './pdf-layout';
import type { Canvas } from '@napi-rs/canvas';
import { binarisedCanvas, freeCanvas } from './binarise';
import { recognizeBinarised, withOcrSlot, type OcrPage } from './ocr';

type PdfJs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');
type PdfDocument = Awaited<ReturnType<PdfJs['getDocument']>['promise']>;
type PdfPage = Awaited<ReturnType<PdfDocument['getPage']>>;

const pdfjsRoot = path.dirname(require.resolve('pdfjs-dist/package.json'));
let pdfjs: Promise<PdfJs> | undefined;
const loadPdfJs = () => (pdfjs ??= import('pdfjs-dist/legacy/build/pdf.mjs'));

/** Scale of the picture stored per page for opening citations (144 dpi). */
const pictureScale = 2;
/** Scale at which a page without text is rendered for OCR (300 dpi). */
const ocrScale = 300 / 72;
/** A page with fewer visible characters than this in its text layer is treated as a scan. */
const minTextChars = 10;

export async function openPdf(bytes: Uint8Array): Promise<PdfDocument> {
  const lib = await loadPdfJs();
  try {
    return await lib.getDocument({
      data: new Uint8Array(bytes), // pdf.js takes ownership of (detaches) the buffer it is given
      standardFontDataUrl: `${pdfjsRoot}/standard_fonts/`,
      cMapUrl: `${pdfjsRoot}/cmaps/`,
      cMapPacked: true,
      isEvalSupported: false,
      useSystemFonts: false,
      verbosity: 0,
    }).promise;
  } catch (err) {
    const name = (err as { name?: string }).name;
    if (name === 'PasswordException')
      throw new UnreadableDocumentError(
        'the PDF is password-protected; remove the password (print or save an unprotected copy) and upload it again',
      );
    throw new UnreadableDocumentError(
      `the PDF cannot be read (it may be damaged or not really a PDF): ${(err as Error).message}`,
    );
  }
}

/**
 * A page of the document. pdf.js 5.4 checks the page number against a page count kept in one static field
 * (PagesMapper) that every document overwrites as it opens, so a document opened meanwhile made another's later
 * pages "Invalid page request". The count is set back to this document's own right before asking: getPage checks
 * it synchronously, so no other document can step in between, and documents stay read in parallel (OCR included).
 */
async function pageOf(doc: PdfDocument, pageNumber: number): Promise<PdfPage> {
  const lib = await loadPdfJs();
  lib.PagesMapper.instance.pagesNumber = doc.numPages;
  return doc.getPage(pageNumber);
}

export async function pdfPageCount(bytes: Uint8Array): Promise<number> {
  const doc = await openPdf(bytes);
  try {
    return doc.numPages;
  } finally {
    await doc.destroy();
  }
}

/** Extracts pages `from`..`to` (1-based, inclusive). */
export async function extractPdfPages(bytes: Uint8Array, from: number, to: number): Promise<Extraction> {
  const doc = await openPdf(bytes);
  const out: Extraction = { pages: [], paragraphs: [] };
  try {
    for (let n = from; n <= Math.min(to, doc.numPages); n++) {
      const page = await pageOf(doc, n);
      const viewport = page.getViewport({ scale: 1 });
      const runs = await textRuns(page);
      const chars = runs.reduce((sum, r) => sum + r.text.replace(/\s/g, '').length, 0);
      if (chars >= minTextChars) {
        // No picture now: rendering is three quarters of a text page's indexing time, and most pages are never
        // cited. The first citation that opens the page renders it (renderPdfPage) and keeps it.
        out.pages.push({ page: n, width: viewport.width, height: viewport.height, unit: 'pt' });
        out.paragraphs.push(...paragraphsOfBlocks(readPage(runs), n));
      } else {
        const { ocr, image } = await withOcrSlot(() => readScan(page));
        const toPoints = 1 / ocrScale;
        const ocrLines: Line[] = ocr.lines.map((l) => ({
          ...l,
          box: scaleBox(l.box, toPoints),
          words: l.words?.map((w) => ({ ...w, box: scaleBox(w.box, toPoints) })),
        }));
        out.pages.push({
          page: n,
          width: viewport.width,
          height: viewport.height,
          unit: 'pt',
          ocr: true,
          ocrConfidence: ocr.confidence,
          image,
        });
        out.paragraphs.push(...paragraphsFromLines(ocrLines, n, ocr.paragraphStarts));
      }
      page.cleanup();
    }
  } finally {
    await doc.destroy();
  }
  return out;
}

/** The text layer's runs, with their positions in viewport space (top-left origin, rotation applied). */
async function textRuns(page: PdfPage): Promise<TextRun[]> {
  const lib = await loadPdfJs();
  const viewport = page.getViewport({ scale: 1 });
  const content = await page.getTextContent();
  const rtl = content.items.some((item) => 'dir' in item && item.dir === 'rtl');
  const mendLigatures = rtl ? await ligatureMender(page) : (text: string) => text;
  const runs: TextRun[] = [];
  for (const item of content.items) {
    if (!('str' in item) || item.str.trim() === '') continue;
    // The item's transform in viewport space, as pdf.js's text layer does.
    const tx = lib.Util.transform(viewport.transform, item.transform);
    const size = Math.hypot(tx[2], tx[3]);
    const text = item.dir === 'rtl' ? mendLigatures(item.str) : item.str;
    runs.push({ text, x: tx[4], baseline: tx[5], size, width: item.width * viewport.scale, dir: item.dir });
  }
  return runs;
}

const rtlChar = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]/;
const reversed = (text: string) => [...text].reverse().join('');

/**
 * Mends what pdf.js does to a right-to-left glyph standing for several characters (a lam-alef ligature is "لأ"):
 * it reverses the run character by character, so the ligature's characters come out swapped ("األقصى" for
 * "الأقصى"). The page's glyphs (its operator list) tell where each glyph's characters begin and end; a word of the
 * run found among them is reversed glyph by glyph instead. Read only for pages with right-to-left text.
 */
async function ligatureMender(page: PdfPage): Promise<(text: string) => string> {
  const lib = await loadPdfJs();
  const ops = await page.getOperatorList();
  const shown: string[][] = [];
  ops.fnArray.forEach((fn, i) => {
    if (fn !== lib.OPS.showText) return;
    const glyphs = ops.argsArray[i][0] as ({ unicode?: string } | number | null)[];
    // Normalised as pdf.js normalises the text content (some presentation-form ligatures to their letters).
    shown.push(
      glyphs.flatMap((g) => (g && typeof g === 'object' && g.unicode ? [lib.normalizeUnicode(g.unicode)] : [])),
    );
  });
  const isLigature = (glyph: string) => glyph.length > 1 && rtlChar.test(glyph[0]);
  if (!shown.some((glyphs) => glyphs.some(isLigature))) return (text) => text;
  const strings = shown.map((glyphs) => glyphs.join(''));
  const mendWord = (word: string): string => {
    for (const [k, string] of strings.entries()) {
      const at = string.indexOf(word);
      if (word === '' || at < 0) continue;
      let out = '';
      let pos = 0;
      for (const glyph of shown[k]) {
        const start = pos;
        pos += glyph.length;
        if (pos <= at || start >= at + word.length) continue;
        if (start < at || pos > at + word.length) return word; // the word ends inside a glyph: leave it
        // Reversed here so that the run's reversal (below, and pdf.js's) leaves the glyph's characters in order.
        out += isLigature(glyph) ? reversed(glyph) : glyph;
      }
      return out;
    }
    return word;
  };
  // The run as shown (visual order), mended word by word, then back to the logical order pdf.js gives.
  return (text) => reversed(reversed(text).split(' ').map(mendWord).join(' '));
}

/** Paragraphs of a page's blocks, numbered down the page in reading order; a table's rows make its own. */
function paragraphsOfBlocks(blocks: Block[], page: number): Paragraph[] {
  const out: Paragraph[] = [];
  for (const block of blocks) {
    if (block.kind === 'text') out.push(...paragraphsFromLines(block.lines, page));
    else out.push({ page, paragraph: 0, text: block.rows.map((r) => r.text).join('\n'), lines: block.rows });
  }
  return out.map((p, i) => ({ ...p, paragraph: i + 1 }));
}

/** The picture of one page, for opening a citation on a page indexed without one. */
export async function renderPdfPage(bytes: Uint8Array, pageNumber: number): Promise<Buffer> {
  const doc = await openPdf(bytes);
  try {
    const page = await pageOf(doc, pageNumber);
    const picture = await render(page, pictureScale);
    page.cleanup();
    return picture;
  } finally {
    await doc.destroy();
  }
}

async function render(page: PdfPage, scale: number): Promise<Buffer> {
  const canvas = await draw(page, scale);
  try {
    return canvas.toBuffer('image/png');
  } finally {
    freeCanvas(canvas);
  }
}

async function draw(page: PdfPage, scale: number): Promise<Canvas> {
  const viewport = page.getViewport({ scale });
  const { createCanvas } = await import('@napi-rs/canvas'); // loaded on first use
  const canvas = createCanvas(Math.ceil(viewport.width), Math.ceil(viewport.height));
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = 'white';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvasContext: ctx as never, canvas: canvas as never, viewport }).promise;
  return canvas;
}

/**
 * A page without text, drawn once at 300 dpi: read in black and white by OCR, and scaled down to the picture kept
 * for citations. Drawing it again at 144 dpi decoded the scan's image a second time, and the 300 dpi page went
 * through a PNG and back before OCR; the canvas is given back before the recogniser starts, so only the greymap
 * (a byte a pixel) waits through OCR.
 */
async function readScan(page: PdfPage): Promise<{ ocr: OcrPage; image: Buffer }> {
  const scan = await draw(page, ocrScale);
  let blackAndWhite: Buffer;
  let image: Buffer;
  try {
    blackAndWhite = binarisedCanvas(scan.getContext('2d'), scan.width, scan.height);
    const { width, height } = page.getViewport({ scale: pictureScale });
    image = await scaledPicture(scan, Math.ceil(width), Math.ceil(height));
  } finally {
    freeCanvas(scan);
  }
  return { ocr: await recognizeBinarised(blackAndWhite), image };
}

/** The canvas scaled down to `width` × `height`, as PNG. */
async function scaledPicture(source: Canvas, width: number, height: number): Promise<Buffer> {
  const { createCanvas } = await import('@napi-rs/canvas');
  const canvas = createCanvas(width, height);
  try {
    const ctx = canvas.getContext('2d');
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(source, 0, 0, canvas.width, canvas.height);
    return canvas.toBuffer('image/png');
  } finally {
    freeCanvas(canvas);
  }
}
