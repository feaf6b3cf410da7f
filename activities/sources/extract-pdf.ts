// PDFs with pdf.js: the text layer with positions where there is one; pages without one (scans) are rendered
// with @napi-rs/canvas at 300 dpi and read by OCR. Boxes are in PDF points from the page's top-left corner.
import path from 'node:path';
import { createCanvas } from '@napi-rs/canvas';
import { UnreadableDocumentError } from './formats';
import { paragraphsFromLines, scaleBox, type Extraction, type Line } from './layout';
import { recognize } from './ocr';

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
      const page = await doc.getPage(n);
      const viewport = page.getViewport({ scale: 1 });
      const lines = await textLines(page);
      const chars = lines.reduce((sum, l) => sum + l.text.replace(/\s/g, '').length, 0);
      if (chars >= minTextChars) {
        // No picture now: rendering is three quarters of a text page's indexing time, and most pages are never
        // cited. The first citation that opens the page renders it (renderPdfPage) and keeps it.
        out.pages.push({ page: n, width: viewport.width, height: viewport.height, unit: 'pt' });
        out.paragraphs.push(...paragraphsFromLines(lines, n));
      } else {
        const scan = await render(page, ocrScale);
        const ocr = await recognize(scan);
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
          image: await render(page, pictureScale),
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

/** The text layer as lines in reading order: runs on one baseline joined, each with its box. */
async function textLines(page: PdfPage): Promise<Line[]> {
  const lib = await loadPdfJs();
  const viewport = page.getViewport({ scale: 1 });
  const content = await page.getTextContent();
  type Run = { text: string; x: number; baseline: number; size: number; width: number };
  const runs: Run[] = [];
  for (const item of content.items) {
    if (!('str' in item) || item.str.trim() === '') continue;
    // The item's transform in viewport space (top-left origin, rotation applied), as pdf.js's text layer does.
    const tx = lib.Util.transform(viewport.transform, item.transform);
    const size = Math.hypot(tx[2], tx[3]);
    runs.push({ text: item.str, x: tx[4], baseline: tx[5], size, width: item.width * viewport.scale });
  }
  runs.sort((a, b) => a.baseline - b.baseline || a.x - b.x);
  const lines: Run[][] = [];
  for (const run of runs) {
    const line = lines[lines.length - 1];
    if (line && Math.abs(line[0].baseline - run.baseline) < 0.3 * Math.max(run.size, line[0].size)) line.push(run);
    else lines.push([run]);
  }
  return lines.map((ls) => {
    ls.sort((a, b) => a.x - b.x);
    const size = Math.max(...ls.map((r) => r.size));
    const baseline = Math.max(...ls.map((r) => r.baseline));
    const x0 = Math.min(...ls.map((r) => r.x));
    const x1 = Math.max(...ls.map((r) => r.x + r.width));
    let text = '';
    let end = -Infinity;
    for (const r of ls) {
      // A gap wider than a fifth of the font size separates words the PDF did not space.
      text += text && r.x - end > 0.2 * r.size && !/\s$/.test(text) && !/^\s/.test(r.text) ? ` ${r.text}` : r.text;
      end = r.x + r.width;
    }
    // Glyphs rise about 0.8 of the font size above the baseline and descend about 0.2 below it.
    const box = { x: x0, y: baseline - 0.8 * size, width: x1 - x0, height: size };
    return { text: text.replace(/\s+/g, ' ').trim(), box: scaleBox(box, 1) };
  });
}

/** The picture of one page, for opening a citation on a page indexed without one. */
export async function renderPdfPage(bytes: Uint8Array, pageNumber: number): Promise<Buffer> {
  const doc = await openPdf(bytes);
  try {
    const page = await doc.getPage(pageNumber);
    const picture = await render(page, pictureScale);
    page.cleanup();
    return picture;
  } finally {
    await doc.destroy();
  }
}

async function render(page: PdfPage, scale: number): Promise<Buffer> {
  const viewport = page.getViewport({ scale });
  const canvas = createCanvas(Math.ceil(viewport.width), Math.ceil(viewport.height));
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = 'white';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvasContext: ctx as never, canvas: canvas as never, viewport }).promise;
  return canvas.toBuffer('image/png');
}
