// Text formats: plain text, Markdown, CSV, JSON, XML and web pages (their main text, without menus and footers).
import { parse as parseCsv } from 'csv-parse/sync';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { parseHTML } from 'linkedom';
import { Readability } from '@mozilla/readability';
import type { Extraction, Paragraph } from './layout';
import { UnreadableDocumentError } from './formats';

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

/** Blank lines separate paragraphs; a heading is a paragraph of its own. */
export function extractMarkdown(bytes: Uint8Array): Extraction {
  const blocks: string[] = [];
  let cur: string[] = [];
  let fenced = false;
  const flush = () => {
    if (cur.length) blocks.push(cur.join('\n'));
    cur = [];
  };
  for (const line of decode(bytes).split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (!fenced && /^\s*$/.test(line)) flush();
    else if (!fenced && /^#{1,6}\s/.test(line)) {
      flush();
      blocks.push(line.replace(/^#{1,6}\s+/, '').replace(/\s+#+\s*$/, ''));
    } else cur.push(line);
  }
  flush();
  return { pages: [], paragraphs: numbered(blocks.map((b) => b.replace(/\s*\n\s*/g, ' '))) };
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

export function rowsToParagraphs(rows: unknown[][], page: number | null, sheetName?: string): Paragraph[] {
  const header = (rows[0] ?? []).map((h) => String(h ?? '').trim());
  const out: Paragraph[] = [];
  const cell = (v: unknown) => (v === null || v === undefined ? '' : String(v).trim());
  rows.forEach((row, i) => {
    const cells = row.map(cell);
    if (cells.every((c) => c === '')) return;
    const text =
      i === 0
        ? cells.filter(Boolean).join('; ')
        : cells
            .map((c, j) => (c === '' ? '' : header[j] ? `${header[j]}: ${c}` : c))
            .filter(Boolean)
            .join('; ');
    out.push({ page, paragraph: i + 1, text: sheetName && i === 0 ? `${sheetName}: ${text}` : text });
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

interface DomNode {
  textContent: string | null;
  querySelector(selector: string): DomNode | null;
  querySelectorAll(selector: string): Iterable<DomNode>;
}
// linkedom's types describe a browser window (the project has no DOM lib); these are the parts used here.
const dom = (html: string) => (parseHTML(html) as unknown as { document: DomNode & { body: DomNode | null } }).document;

const blockTags = 'h1,h2,h3,h4,h5,h6,p,li,pre,blockquote,td,th,dt,dd,figcaption,caption';

/** The page's main text (Mozilla Readability, as Firefox's reader view), one paragraph per block element. */
export function extractHtml(bytes: Uint8Array): Extraction & { title?: string } {
  const html = decode(bytes);
  const document = dom(html);
  const article = new Readability(document as never, { charThreshold: 100 }).parse();
  const main = article?.content ? dom(`<html><body>${article.content}</body></html>`) : document;
  const texts: string[] = [];
  if (article?.title) texts.push(article.title);
  const blocks = [...main.querySelectorAll(blockTags)].filter(
    (el) => !el.querySelector(blockTags), // innermost blocks only: no text twice
  );
  for (const el of blocks) texts.push(el.textContent ?? '');
  if (blocks.length === 0) texts.push(...(main.body?.textContent ?? '').split(/\n\s*\n/));
  return { pages: [], paragraphs: numbered(texts), title: article?.title ?? undefined };
}
