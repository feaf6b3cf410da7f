// Small real documents made by the tests themselves, in every format sources accept, with what they say and
// where (page, paragraph, and for PDFs the true box of the text on the page, in points from the top-left).
import { createCanvas } from '@napi-rs/canvas';
import { GIFEncoder, applyPalette, quantize } from 'gifenc';
import JSZip from 'jszip';
import { PDFDocument, StandardFonts, type PDFFont } from 'pdf-lib';
import * as UTIF from 'utif2';
import * as XLSX from '@e965/xlsx';
import type { Box } from '../../activities/sources/layout';
import { openPdf } from '../../activities/sources/extract-pdf';

export interface TextLine {
  text: string;
  /** Baseline, in points from the page's bottom (PDF's own coordinates). */
  y: number;
}

const pageSize: [number, number] = [612, 792];
const margin = 72;

/** The ink box of lines of Helvetica at `size`, in points from the top-left corner. */
export function trueBox(font: PDFFont, size: number, lines: TextLine[]): Box {
  const ascent = font.heightAtSize(size, { descender: false });
  const full = font.heightAtSize(size);
  const boxes = lines.map((l) => ({
    x: margin,
    y: pageSize[1] - l.y - ascent,
    width: font.widthOfTextAtSize(l.text, size),
    height: full,
  }));
  const x0 = Math.min(...boxes.map((b) => b.x));
  const y0 = Math.min(...boxes.map((b) => b.y));
  const x1 = Math.max(...boxes.map((b) => b.x + b.width));
  const y1 = Math.max(...boxes.map((b) => b.y + b.height));
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

export function iou(a: Box, b: Box): number {
  const ix = Math.max(0, Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x));
  const iy = Math.max(0, Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y));
  const inter = ix * iy;
  return inter / (a.width * a.height + b.width * b.height - inter);
}

/**
 * A text PDF: each page is a list of paragraphs, each paragraph a list of lines. Returns the bytes and, per
 * page and paragraph, the true box of the paragraph's text.
 */
export async function textPdf(pages: string[][][], size = 14): Promise<{ bytes: Uint8Array; boxes: Box[][] }> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const boxes: Box[][] = [];
  for (const paragraphs of pages) {
    const page = doc.addPage(pageSize);
    let y = pageSize[1] - margin - size;
    const pageBoxes: Box[] = [];
    for (const paragraph of paragraphs) {
      const lines: TextLine[] = [];
      for (const text of paragraph) {
        page.drawText(text, { x: margin, y, size, font });
        lines.push({ text, y });
        y -= size * 1.25;
      }
      pageBoxes.push(trueBox(font, size, lines));
      y -= size * 1.5; // paragraph spacing
    }
    boxes.push(pageBoxes);
  }
  return { bytes: await doc.save(), boxes };
}

/** Renders page 1 of a PDF to RGBA pixels at `dpi`. */
async function rasterize(pdf: Uint8Array, dpi: number) {
  const doc = await openPdf(pdf);
  const page = await doc.getPage(1);
  const viewport = page.getViewport({ scale: dpi / 72 });
  const canvas = createCanvas(Math.ceil(viewport.width), Math.ceil(viewport.height));
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = 'white';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvasContext: ctx as never, canvas: canvas as never, viewport }).promise;
  await doc.destroy();
  return canvas;
}

/** A scan: the text PDF's first page as a picture only (no text layer), in a new PDF of the same size. */
export async function scannedPdf(paragraphs: string[][]): Promise<{ bytes: Uint8Array; boxes: Box[] }> {
  const text = await textPdf([paragraphs]);
  const canvas = await rasterize(text.bytes, 200);
  const doc = await PDFDocument.create();
  const png = await doc.embedPng(canvas.toBuffer('image/png'));
  const page = doc.addPage(pageSize);
  page.drawImage(png, { x: 0, y: 0, width: pageSize[0], height: pageSize[1] });
  return { bytes: await doc.save(), boxes: text.boxes[0] };
}

/** A picture of text in an image format; boxes are in the image's pixels. */
export async function textImage(
  format: 'png' | 'jpeg' | 'gif' | 'tiff',
  paragraphs: string[][],
): Promise<{ bytes: Buffer; boxes: Box[] }> {
  const dpi = 150;
  const text = await textPdf([paragraphs]);
  const canvas = await rasterize(text.bytes, dpi);
  const k = dpi / 72;
  const boxes = text.boxes[0].map((b) => ({ x: b.x * k, y: b.y * k, width: b.width * k, height: b.height * k }));
  if (format === 'png') return { bytes: canvas.toBuffer('image/png'), boxes };
  if (format === 'jpeg') return { bytes: canvas.toBuffer('image/jpeg', 92), boxes };
  const { data, width, height } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  if (format === 'tiff')
    return { bytes: Buffer.from(UTIF.encodeImage(new Uint8Array(data.buffer), width, height)), boxes };
  const palette = quantize(data, 16);
  const gif = GIFEncoder();
  gif.writeFrame(applyPalette(data, palette), width, height, { palette });
  gif.finish();
  return { bytes: Buffer.from(gif.bytes()), boxes };
}

const xml = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>';

const wordParagraph = (text: string) => `<w:p><w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;
const wordTable = (rows: string[][]) =>
  `<w:tbl>${rows.map((r) => `<w:tr>${r.map((c) => `<w:tc>${wordParagraph(c)}</w:tc>`).join('')}</w:tr>`).join('')}</w:tbl>`;

/**
 * A Word document built by hand (the parts Word itself needs), one <w:p> per paragraph; an array of rows is a
 * table (<w:tbl>), a paragraph in each cell.
 */
export async function docx(paragraphs: (string | string[][])[]): Promise<Buffer> {
  const zip = new JSZip();
  zip.file(
    '[Content_Types].xml',
    `${xml}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
  );
  zip.file(
    '_rels/.rels',
    `${xml}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
  );
  zip.file(
    'word/document.xml',
    `${xml}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${paragraphs
      .map((p) => (typeof p === 'string' ? wordParagraph(p) : wordTable(p)))
      .join('')}</w:body></w:document>`,
  );
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

/** A presentation built by hand: one slide per entry, one text paragraph per string. */
export async function pptx(slides: string[][]): Promise<Buffer> {
  const zip = new JSZip();
  const slideType = 'application/vnd.openxmlformats-officedocument.presentationml.slide+xml';
  zip.file(
    '[Content_Types].xml',
    `${xml}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>${slides
      .map((_, i) => `<Override PartName="/ppt/slides/slide${i + 1}.xml" ContentType="${slideType}"/>`)
      .join('')}</Types>`,
  );
  zip.file(
    '_rels/.rels',
    `${xml}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>`,
  );
  zip.file(
    'ppt/presentation.xml',
    `${xml}<p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:sldIdLst>${slides
      .map((_, i) => `<p:sldId id="${256 + i}" r:id="rId${i + 2}"/>`)
      .join('')}</p:sldIdLst></p:presentation>`,
  );
  zip.file(
    'ppt/_rels/presentation.xml.rels',
    `${xml}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${slides
      .map(
        (_, i) =>
          `<Relationship Id="rId${i + 2}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide${i + 1}.xml"/>`,
      )
      .join('')}</Relationships>`,
  );
  slides.forEach((texts, i) =>
    zip.file(
      `ppt/slides/slide${i + 1}.xml`,
      `${xml}<p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody>${texts
        .map((t) => `<a:p><a:r><a:t>${t}</a:t></a:r></a:p>`)
        .join('')}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`,
    ),
  );
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

/** A workbook with SheetJS: sheets of rows (the first row a header). */
export function workbook(sheets: Record<string, unknown[][]>, bookType: 'xlsx' | 'xls'): Buffer {
  const wb = XLSX.utils.book_new();
  for (const [name, rows] of Object.entries(sheets))
    XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet(rows), name);
  return XLSX.write(wb, { type: 'buffer', bookType: bookType === 'xls' ? 'biff8' : 'xlsx' });
}

/** A .docx-named ZIP with one entry that inflates to `megabytes` of zeros: a zip bomb. */
export async function zipBomb(megabytes: number): Promise<Buffer> {
  const zip = new JSZip();
  zip.file('word/document.xml', Buffer.alloc(megabytes * 1024 * 1024));
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', compressionOptions: { level: 9 } });
}

/** An OLE compound file with the given streams (SheetJS's CFB writer). */
function oleFile(streams: Record<string, Buffer>): Buffer {
  const cfb = XLSX.CFB.utils.cfb_new();
  for (const [name, content] of Object.entries(streams)) XLSX.CFB.utils.cfb_add(cfb, `/${name}`, content);
  return Buffer.from(XLSX.CFB.write(cfb, { type: 'buffer' }));
}

/**
 * A Word 97–2003 document: the FIB of a WordDocument stream pointing at one piece of UTF-16 text through the
 * piece table (CLX) of the 1Table stream — the structures a .doc reader follows to find the text.
 */
export function doc(paragraphs: string[]): Buffer {
  const text = paragraphs.join('\r') + '\r';
  const textAt = 0x800;
  const word = Buffer.alloc(Math.max(4096, textAt + text.length * 2));
  word.writeUInt16LE(0xa5ec, 0); // wIdent
  word.writeUInt16LE(0x00c1, 2); // nFib: Word 97
  word.writeUInt16LE(0x0200, 0xa); // fWhichTblStm: 1Table
  word.writeUInt32LE(text.length, 0x4c); // ccpText
  word.write(text, textAt, 'utf16le');
  const clx = Buffer.alloc(1 + 4 + 8 + 8);
  clx.writeUInt8(2, 0); // Pcdt
  clx.writeUInt32LE(16, 1); // PlcPcd size: two CPs and one PCD
  clx.writeUInt32LE(0, 5);
  clx.writeUInt32LE(text.length, 9);
  clx.writeUInt16LE(0, 13);
  clx.writeUInt32LE(textAt, 15); // fc: uncompressed (UTF-16) text at this offset
  clx.writeUInt16LE(0, 19);
  word.writeUInt32LE(0, 0x1a2); // fcClx
  word.writeUInt32LE(clx.length, 0x1a6); // lcbClx
  return oleFile({ WordDocument: word, '1Table': clx });
}

/** What Office writes for a password-protected .docx: an OLE file with the encrypted package inside. */
export function encryptedDocx(): Buffer {
  return oleFile({ EncryptionInfo: Buffer.alloc(256, 1), EncryptedPackage: Buffer.alloc(4096, 7) });
}

/** A PDF with a user password (Standard security handler), which pdf.js cannot open without it. */
export function encryptedPdf(): Buffer {
  const hex = (n: number, seed: number) =>
    Array.from({ length: n }, (_, i) => ((i * 37 + seed) % 256).toString(16).padStart(2, '0')).join('');
  return Buffer.from(
    [
      '%PDF-1.4',
      '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj',
      '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj',
      '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj',
      `4 0 obj << /Filter /Standard /V 1 /R 2 /O <${hex(32, 1)}> /U <${hex(32, 2)}> /P -4 >> endobj`,
      `trailer << /Root 1 0 R /Encrypt 4 0 R /ID [<${hex(16, 3)}><${hex(16, 3)}>] /Size 5 >>`,
      '%%EOF',
    ].join('\n'),
    'latin1',
  );
}
