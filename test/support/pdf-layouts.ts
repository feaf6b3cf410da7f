// PDFs laid out as real documents are: two columns under a full-width title, a table, a single column with an
// indented line and right-aligned figures, Arabic placed word by word or line by line. Each says where its text
// is (boxes in points from the page's top-left corner) so tests can check reading order and citation boxes.
import fs from 'node:fs';
import path from 'node:path';
import fontkit from '@pdf-lib/fontkit';
import { PDFDocument, StandardFonts, type PDFFont, type PDFPage } from 'pdf-lib';
import type { Box } from '../../activities/sources/layout';

const pageSize: [number, number] = [612, 792];

/** Draws a line at (x, baseline from the top) and returns its ink box. */
function draw(page: PDFPage, font: PDFFont, size: number, text: string, x: number, top: number): Box {
  page.drawText(text, { x, y: pageSize[1] - top, size, font });
  const ascent = font.heightAtSize(size, { descender: false });
  return { x, y: top - ascent, width: font.widthOfTextAtSize(text, size), height: font.heightAtSize(size) };
}

/** Words wrapped into lines no wider than `width`. */
function wrap(font: PDFFont, size: number, text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line ? `${line} ${word}` : word;
    if (line && font.widthOfTextAtSize(next, size) > width) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * A two-column page under a full-width title: each column a list of paragraphs wrapped to the column's width.
 * Returns the boxes of each paragraph's lines, paragraph by paragraph, left column first.
 */
export async function twoColumnPdf(
  title: string,
  left: string[],
  right: string[],
): Promise<{ bytes: Uint8Array; lines: Box[][] }> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.TimesRoman);
  const page = doc.addPage(pageSize);
  const size = 10;
  draw(page, font, 16, title, 72, 90);
  const columnWidth = 222;
  const lines: Box[][][] = [];
  for (const [c, paragraphs] of [left, right].entries()) {
    let top = 130;
    const column: Box[][] = [];
    for (const paragraph of paragraphs) {
      column.push(
        wrap(font, size, paragraph, columnWidth).map((l) => draw(page, font, size, l, 72 + c * 246, (top += 12))),
      );
      top += 8;
    }
    lines.push(column);
  }
  return { bytes: await doc.save(), lines: lines.flat() };
}

/** One column of paragraphs; some lines indented, and lines that end with a figure at the right margin. */
export async function singleColumnPdf(
  lines: { text: string; indent?: number; figure?: string; gapBefore?: boolean }[],
): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage(pageSize);
  const size = 11;
  let top = 90;
  for (const line of lines) {
    top += line.gapBefore ? 24 : 14;
    draw(page, font, size, line.text, 72 + (line.indent ?? 0), top);
    if (line.figure) draw(page, font, size, line.figure, 540 - font.widthOfTextAtSize(line.figure, size), top);
  }
  return doc.save();
}

/** A caption, then a table: a header row and body rows, each cell at its column's x. Returns each row's box. */
export async function tablePdf(
  caption: string,
  columns: number[],
  rows: string[][],
): Promise<{ bytes: Uint8Array; rows: Box[] }> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage(pageSize);
  const size = 10;
  draw(page, font, 12, caption, 72, 90);
  const boxes = rows.map((cells, r) => {
    const top = 120 + r * 16;
    const drawn = cells.map((cell, c) => draw(page, font, size, cell, columns[c], top));
    const x0 = Math.min(...drawn.map((b) => b.x));
    const x1 = Math.max(...drawn.map((b) => b.x + b.width));
    return { x: x0, y: drawn[0].y, width: x1 - x0, height: drawn[0].height };
  });
  draw(page, font, size, 'Prices include VAT and are billed monthly.', 72, 130 + rows.length * 16);
  return { bytes: await doc.save(), rows: boxes };
}

const arabicFont = () =>
  fs.readFileSync(
    path.join(path.dirname(require.resolve('@embedpdf/fonts-arabic')), '../fonts/NotoNaskhArabic-Regular.ttf'),
  );

/**
 * Arabic lines, right-aligned at the right margin, shaped by fontkit (joining forms, lam-alef ligatures) as a word
 * processor does: `words` places each word as its own text object, right to left; otherwise a line is one.
 */
export async function arabicPdf(lines: string[], placement: 'words' | 'lines'): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.registerFontkit(fontkit);
  const font = await doc.embedFont(arabicFont(), { subset: true });
  const page = doc.addPage(pageSize);
  const size = 14;
  const space = font.widthOfTextAtSize(' ', size);
  lines.forEach((line, i) => {
    const top = 100 + i * 28;
    if (placement === 'lines') {
      draw(page, font, size, line, 540 - font.widthOfTextAtSize(line, size), top);
      return;
    }
    let x = 540;
    for (const word of line.split(' ')) {
      x -= font.widthOfTextAtSize(word, size);
      draw(page, font, size, word, x, top);
      x -= space;
    }
  });
  return doc.save();
}
