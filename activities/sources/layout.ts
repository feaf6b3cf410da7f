// What extraction produces, whatever the format, and the geometry shared by PDF text and OCR: positioned lines
// grouped into paragraphs, long paragraphs cut into passages that keep their lines' boxes. A line's box (Box) is
// declared with the passages that carry it (model/retrieval.ts) and named here with the rest of the geometry.
import type { Box } from '../../model/retrieval';

export type { Box };

export interface Word {
  text: string;
  confidence: number;
  box: Box;
}

export interface Line {
  text: string;
  box: Box;
  words?: Word[];
  /** Recogniser's confidence (0–100) for OCR'd lines. */
  confidence?: number;
}

export interface Paragraph {
  /** 1-based; null for formats without pages. */
  page: number | null;
  /** 1-based within the page (or the document when it has no pages). */
  paragraph: number;
  text: string;
  lines?: Line[];
}

export interface PageInfo {
  page: number;
  width?: number;
  height?: number;
  unit?: 'pt' | 'px';
  ocr?: boolean;
  ocrConfidence?: number;
  /** A PNG of the page, for opening citations. */
  image?: Buffer;
}

export interface Extraction {
  pages: PageInfo[];
  paragraphs: Paragraph[];
}

export interface PassageDraft {
  page: number | null;
  paragraph: number;
  part: number;
  text: string;
  boxes: Box[] | null;
  words: Word[] | null;
  ocrConfidence: number | null;
}

export const union = (boxes: Box[]): Box => {
  const x0 = Math.min(...boxes.map((b) => b.x));
  const y0 = Math.min(...boxes.map((b) => b.y));
  const x1 = Math.max(...boxes.map((b) => b.x + b.width));
  const y1 = Math.max(...boxes.map((b) => b.y + b.height));
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
};

export const scaleBox = (b: Box, k: number): Box => ({
  x: round(b.x * k),
  y: round(b.y * k),
  width: round(b.width * k),
  height: round(b.height * k),
});

const round = (n: number) => Math.round(n * 100) / 100;

const overlapsHorizontally = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width;

/**
 * Groups lines (in reading order) into paragraphs: a new paragraph starts where the vertical gap to the previous
 * line exceeds 0.8 of its height, where the lines do not share any horizontal extent (another column), or
 * where the recogniser already saw a paragraph break (`breaks`: indexes of lines that start one). Then the short
 * lines of one block (a receipt, a form section, an address) are joined, see `joinShortLineBlocks`.
 */
export function paragraphsFromLines(lines: Line[], page: number, breaks: Set<number> = new Set()): Paragraph[] {
  const groups: Line[][] = [];
  lines.forEach((line, i) => {
    const prev = i > 0 ? lines[i - 1] : undefined;
    const current = groups[groups.length - 1];
    const gap = prev ? line.box.y - (prev.box.y + prev.box.height) : 0;
    const height = prev ? Math.max(prev.box.height, 1) : 1;
    const newParagraph =
      !prev || breaks.has(i) || gap > 0.8 * height || gap < -height || !overlapsHorizontally(line.box, prev.box);
    if (newParagraph) groups.push([line]);
    else current.push(line);
  });
  return joinShortLineBlocks(groups)
    .map((ls) => ({ lines: ls, text: joinLines(ls.map((l) => l.text)) }))
    .filter((g) => g.text !== '')
    .map((g, i) => ({ page, paragraph: i + 1, text: g.text, lines: g.lines }));
}

/** A line at most this long is a receipt's, a form's or an address's rather than running text. */
const shortLineChars = 40;
/**
 * Short lines further apart than this (× line height) belong to different blocks. A blank line or two, as tills
 * print between a receipt's header, items and totals, stays within: the whole receipt is one passage, so a
 * question naming the shop finds its total.
 */
const maxGapInBlock = 4;

/**
 * Joins neighbouring paragraphs made only of short lines, when no wide space parts them: a receipt or a form has
 * wider line spacing than prose, so each of its lines would otherwise be a paragraph ("TOTAL EUR 86.40" alone,
 * without the shop or the items). Running text is never joined: its lines are longer, are sentences, or one
 * carries on into the next, so prose keeps its paragraph breaks.
 */
function joinShortLineBlocks(groups: Line[][]): Line[][] {
  const isBlockOfShortLines = (ls: Line[]) =>
    ls.every((l) => l.text.trim().length <= shortLineChars && !isSentence(l.text)) &&
    ls.every((l, i) => i === 0 || !carriesOn(ls[i - 1].text, l.text));
  const out: { lines: Line[]; short: boolean }[] = [];
  for (const group of groups) {
    const previous = out[out.length - 1];
    const last = previous?.lines[previous.lines.length - 1];
    const first = group[0];
    const short = isBlockOfShortLines(group);
    const near =
      last !== undefined &&
      first.box.y - (last.box.y + last.box.height) <= maxGapInBlock * Math.max(last.box.height, 1) &&
      first.box.y + first.box.height > last.box.y &&
      overlapsHorizontally(first.box, last.box);
    if (near && short && previous.short) previous.lines.push(...group);
    else out.push({ lines: [...group], short });
  }
  return out.map((b) => b.lines);
}

/**
 * Whether a line reads on into the next, as running text does: a word hyphenated across them, or a line ending
 * mid-sentence (on a word or a comma) before one starting in lower case. A receipt's "TOTAL EUR 86.40" does not
 * read on into "incl. VAT 19% 13.80".
 */
const carriesOn = (line: string, next: string) =>
  /[-\u00ad]$/.test(line.trim()) || (/[\p{L},;]$/u.test(line.trim()) && /^\p{Ll}/u.test(next.trim()));

/** A line that is a sentence of its own ("The board meets every quarter."), as short paragraphs of prose are. */
const isSentence = (line: string) => {
  const t = line.trim();
  return /[.!?]["')\]]?$/.test(t) && /\p{Ll}/u.test(t) && t.split(/\s+/).length >= 3;
};

/** Joins a paragraph's lines, mending words hyphenated across a line break. */
function joinLines(texts: string[]): string {
  let out = '';
  for (const raw of texts) {
    const t = raw.trim();
    if (!t) continue;
    if (out.endsWith('-') && /^[a-z]/.test(t)) out = out.slice(0, -1) + t;
    else out = out ? `${out} ${t}` : t;
  }
  return out.replace(/\s+/g, ' ');
}

export const maxPassageChars = 1200;

/** Splits paragraphs into passages of at most ~1,200 characters, at line or sentence boundaries. */
export function toPassages(paragraphs: Paragraph[]): PassageDraft[] {
  const out: PassageDraft[] = [];
  for (const p of paragraphs) {
    if (p.lines && p.lines.length > 0) {
      let part: Line[] = [];
      let size = 0;
      let n = 0;
      const flush = () => {
        if (part.length === 0) return;
        const words = part.flatMap((l) => l.words ?? []);
        const conf = part.filter((l) => l.confidence !== undefined).map((l) => l.confidence!);
        out.push({
          page: p.page,
          paragraph: p.paragraph,
          part: ++n,
          text: joinLines(part.map((l) => l.text)),
          boxes: part.map((l) => l.box),
          words: words.length > 0 ? words : null,
          ocrConfidence: conf.length > 0 ? round(conf.reduce((a, b) => a + b, 0) / conf.length) : null,
        });
        part = [];
        size = 0;
      };
      for (const line of p.lines) {
        if (size + line.text.length > maxPassageChars) flush();
        part.push(line);
        size += line.text.length + 1;
      }
      flush();
      continue;
    }
    splitText(p.text).forEach((text, i) =>
      out.push({
        page: p.page,
        paragraph: p.paragraph,
        part: i + 1,
        text,
        boxes: null,
        words: null,
        ocrConfidence: null,
      }),
    );
  }
  return out;
}

function splitText(text: string): string[] {
  if (text.length <= maxPassageChars) return [text];
  const sentences = text.match(/[^.!?\n]+(?:[.!?]+|\n|$)\s*/g) ?? [text];
  const parts: string[] = [];
  let cur = '';
  for (const s of sentences) {
    if (cur && cur.length + s.length > maxPassageChars) {
      parts.push(cur.trim());
      cur = '';
    }
    // A single sentence longer than a passage (a table dump, minified JSON) is cut by length.
    for (let i = 0; i < s.length; i += maxPassageChars) {
      const piece = s.slice(i, i + maxPassageChars);
      if (cur && cur.length + piece.length > maxPassageChars) {
        parts.push(cur.trim());
        cur = '';
      }
      cur += piece;
    }
  }
  if (cur.trim()) parts.push(cur.trim());
  return parts;
}
