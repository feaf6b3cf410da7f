// Text formats: plain text, Markdown, CSV, JSON, XML and web pages (their main text, without menus and footers).
import { parse as parseCsv } from 'csv-parse/sync';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Extraction, Paragraph } from './layout';
import { UnreadableDocumentError } from '../../services/sources/formats';
import { labelledRow } from './tables';
import { blockTexts, dom } from './html-blocks';
import { underHeadings, type Block } from './headings';

const decode = (bytes: Uint8Array) => new TextDecoder('utf-8').decode(bytes).replace(/^\uFEFF/, '');

const numbered = (texts: string[]): Paragraph[] =>
  texts
    .map((t) => t.replace(/[ \t]+/g, ' ').trim())
    .filter(Boolean)
    .map((text, i) => ({ page: null, paragraph: i + 1, text }));

/** Paragraphs are separated by blank lines. */
export function extractPlainText(bytes: Uint8Array): Extraction {
  return {
    pages: [],
    paragraphs: numbered(
      decode(bytes)
        .split(/\r?\n\s*\r?\n/)
        .map((p) => p.replace(/\s+/g, ' ')),
    ),
  };
}

/** Blank lines separate paragraphs; each is read under its section's heading (headings.ts). */
export function extractMarkdown(bytes: Uint8Array): Extraction {
  const blocks: Block[] = [];
  let cur: string[] = [];
  let fenced = false;
  const flush = () => {
    if (cur.length) blocks.push({ text: cur.join(' ').replace(/\s+/g, ' ').trim() });
    cur = [];
  };
  for (const line of decode(bytes).split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (!fenced && /^\s*$/.test(line)) flush();
    else if (!fenced && /^#{1,6}\s/.test(line)) {
      flush();
      blocks.push({
        text: line
          .replace(/^#{1,6}\s+/, '')
          .replace(/\s+#+\s*$/, '')
          .trim(),
        heading: true,
      });
    } else cur.push(line);
  }
  flush();
  return { pages: [], paragraphs: numbered(underHeadings(blocks)) };
}

/**
 * One paragraph per row, numbered as a spreadsheet numbers rows (the header is row 1), each row written as
 * "column: value; …" so a passage read alone still says what its values are.
 */
export function extractCsv(bytes: Uint8Array): Extraction {
  let rows: string[][];
  try {
    rows = parseCsv(decode(bytes), { relax_column_count: true, skip_empty_lines: false, bom: true });
  } catch (err) {
    throw new UnreadableDocumentError(`the CSV cannot be read: ${(err as Error).message}`);
  }
  return { pages: [], paragraphs: rowsToParagraphs(rows, null) };
}

/**
 * The rows of a sheet or CSV below its header row, each labelled by it. The header row is a paragraph only when no
 * row follows it: each row already says it, and alone it would outrank the rows for questions worded like its
 * headings. A named sheet is the heading of its rows (headings.ts), as a section's heading is.
 */
export function rowsToParagraphs(rows: unknown[][], page: number | null, sheetName?: string): Paragraph[] {
  const cell = (v: unknown) => (v === null || v === undefined ? '' : String(v).trim());
  const cells = rows.map((row) => row.map(cell));
  const header = cells[0] ?? [];
  const filled = (r: string[]) => r.some((c) => c !== '');
  const heading = sheetName && !/^sheet\s*\d*$/i.test(sheetName.trim()) ? sheetName : undefined;
  if (!cells.slice(1).some(filled)) {
    if (!filled(header)) return [];
    const text = header.filter(Boolean).join('; ');
    return [{ page, paragraph: 1, text: sheetName ? `${sheetName}: ${text}` : text }];
  }
  const out: Paragraph[] = [];
  cells.forEach((row, i) => {
    if (i === 0 || !filled(row)) return;
    const text = labelledRow(header, row);
    out.push({ page, paragraph: i + 1, text: heading ? `${heading}\n${text}` : text });
  });
  return out;
}

/** Leaves as "path: value" lines; each element of a top-level array (or each top-level key) is a paragraph. */
export function extractJson(bytes: Uint8Array): Extraction {
  let value: unknown;
  try {
    value = JSON.parse(decode(bytes));
  } catch (err) {
    throw new UnreadableDocumentError(`the file is not valid JSON: ${(err as Error).message}`);
  }
  return { pages: [], paragraphs: numbered(treeParagraphs(value)) };
}

export function extractXml(bytes: Uint8Array): Extraction {
  const text = decode(bytes);
  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    throw new UnreadableDocumentError(
      `the file is not well-formed XML: ${valid.err.msg} (line ${valid.err.line}, column ${valid.err.col})`,
    );
  }
  const tree = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', textNodeName: '#text' }).parse(
    text,
  ) as Record<string, unknown>;
  const roots = Object.entries(tree).filter(([k]) => !k.startsWith('?'));
  // The root element's children are the paragraphs (a catalogue's books, a feed's entries).
  const inner = roots.length === 1 ? roots[0][1] : Object.fromEntries(roots);
  return { pages: [], paragraphs: numbered(treeParagraphs(inner)) };
}

function treeParagraphs(value: unknown): string[] {
  if (Array.isArray(value)) return value.map((v) => leaves(v, '').join('\n'));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) =>
      Array.isArray(v) ? v.map((e) => leaves(e, k).join('\n')) : [leaves(v, k).join('\n')],
    );
  }
  return [String(value)];
}

function leaves(value: unknown, path: string): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => {
      const key = k === '#text' ? '' : k.replace(/^@/, '');
      return leaves(v, key ? (path ? `${path}.${key}` : key) : path);
    });
  }
  if (value === null || value === undefined || value === '') return [];
  return [path ? `${path}: ${String(value)}` : String(value)];
}

/**
 * The page's main text (Mozilla Readability, as Firefox's reader view), one paragraph per block element and a
 * table's rows with their header (html-blocks.ts).
 */
export function extractHtml(bytes: Uint8Array): Extraction & { title?: string } {
  // Loaded on first use: a service that never reads a web page does not hold it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Readability }: typeof import('@mozilla/readability') = require('@mozilla/readability');
  const html = decode(bytes);
  const document = dom(html);
  const article = new Readability(document as never, { charThreshold: 100 }).parse();
  const main = article?.content ? dom(`<html><body>${article.content}</body></html>`) : document;
  const texts: string[] = [];
  if (article?.title) texts.push(article.title);
  const blocks = main.body ? blockTexts(main.body) : [];
  texts.push(...blocks);
  if (blocks.length === 0) texts.push(...(main.body?.textContent ?? '').split(/\n\s*\n/));
  return { pages: [], paragraphs: numbered(texts), title: article?.title ?? undefined };
}
