// The reading order of a PDF page's text layer, as a person reads it: runs on one baseline make a row, and a row
// is cut into segments where a wide gap parts its runs. Columns are found from gaps in the x coverage of the
// segments (XY-cut: a gutter no line crosses, except a few full-width lines such as a title), and read one after
// the other; rows whose segments line up into a grid are a table, read row by row with the header's labels.
// Right-to-left runs are put in logical order with the Unicode bidi algorithm.
import bidiFactory from 'bidi-js';
import { scaleBox, union, type Box, type Line } from './layout';
import { labelledRow, maxRowsOnTheirOwn } from './tables';

/** A run of text as pdf.js places it, in points from the page's top-left corner. */
export interface TextRun {
  text: string;
  x: number;
  baseline: number;
  size: number;
  width: number;
  /** pdf.js's direction of the run: its text is already in logical order, the runs are still in visual order. */
  dir?: string;
}

export type Block = { kind: 'text'; lines: Line[] } | { kind: 'table'; rows: Line[] };

interface Segment {
  runs: TextRun[];
  row: number;
  x0: number;
  x1: number;
  top: number;
  bottom: number;
  size: number;
  chars: number;
}

/** A gap wider than this (× font size) between runs of one row parts two segments (columns, table cells). */
const segmentGap = 1.0;
/** A gutter between columns is at least this wide (× font size). */
const minGutter = 0.8;
/** Column text has lines at least this long (median characters); shorter ones are a table's cells or a number. */
const minColumnLineChars = 18;
/** Table cells are this short or shorter (median characters); longer ones are running text. */
const maxCellChars = 40;
/** A long table's rows are read in groups of about this many. */
const rowsPerGroup = 10;

const rtlChars = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]/;
const rtlCharsGlobal = new RegExp(rtlChars.source, 'g');
const ltrCharsGlobal = /[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]/g;

/** The page's text as blocks in reading order: columns one after the other, tables row by row. */
export function readPage(runs: TextRun[]): Block[] {
  const segments = segmentsOf(rowsOf(runs));
  const rtl = isMostlyRtl(runs.map((r) => r.text).join(''));
  return flows(segments, rtl).flatMap((flow) => blocksOf(flow, rtl));
}

/** Runs grouped by baseline, top to bottom. */
function rowsOf(runs: TextRun[]): TextRun[][] {
  const sorted = runs.filter((r) => r.text.trim() !== '').sort((a, b) => a.baseline - b.baseline || a.x - b.x);
  const rows: TextRun[][] = [];
  for (const run of sorted) {
    const row = rows[rows.length - 1];
    if (row && Math.abs(row[0].baseline - run.baseline) < 0.3 * Math.max(run.size, row[0].size)) row.push(run);
    else rows.push([run]);
  }
  for (const row of rows) row.sort((a, b) => a.x - b.x);
  return rows;
}

function segmentsOf(rows: TextRun[][]): Segment[] {
  const out: Segment[] = [];
  rows.forEach((row, i) => {
    let current: TextRun[] = [];
    let end = -Infinity;
    const flush = () => {
      if (current.length > 0) out.push(segment(current, i));
      current = [];
    };
    for (const run of row) {
      if (current.length > 0 && run.x - end > segmentGap * Math.max(run.size, current[0].size)) flush();
      current.push(run);
      end = Math.max(end, run.x + run.width);
    }
    flush();
  });
  return out;
}

function segment(runs: TextRun[], row: number): Segment {
  const box = lineBox(runs);
  return {
    runs,
    row,
    x0: box.x,
    x1: box.x + box.width,
    top: box.y,
    bottom: box.y + box.height,
    size: Math.max(...runs.map((r) => r.size)),
    chars: runs.reduce((n, r) => n + r.text.trim().length, 0),
  };
}

/** Glyphs rise about 0.8 of the font size above the baseline and descend about 0.2 below it. */
function lineBox(runs: TextRun[]): Box {
  const size = Math.max(...runs.map((r) => r.size));
  const baseline = Math.max(...runs.map((r) => r.baseline));
  const x0 = Math.min(...runs.map((r) => r.x));
  const x1 = Math.max(...runs.map((r) => r.x + r.width));
  return { x: x0, y: baseline - 0.8 * size, width: x1 - x0, height: size };
}

const median = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)];
};

/**
 * The segments in reading order, as flows (a column, or the whole page when it has none). A gutter found, the
 * lines crossing it (a title, a full-width figure caption) cut the page into stretches read one after the
 * other, each stretch column by column; each column may have columns of its own.
 */
function flows(segments: Segment[], rtl: boolean): Segment[][] {
  const gutter = findGutter(segments);
  if (!gutter) return segments.length > 0 ? [segments] : [];
  const out: Segment[][] = [];
  let stretch: Segment[] = [];
  let spanning: Segment[] = [];
  const flushStretch = () => {
    if (stretch.length === 0) return;
    const left = stretch.filter((s) => s.x1 <= gutter.x0);
    const right = stretch.filter((s) => s.x0 >= gutter.x1);
    for (const side of rtl ? [right, left] : [left, right]) out.push(...flows(side, rtl));
    stretch = [];
  };
  const flushSpanning = () => {
    if (spanning.length > 0) out.push(spanning);
    spanning = [];
  };
  for (const s of [...segments].sort((a, b) => a.top - b.top || a.x0 - b.x0)) {
    if (s.x1 > gutter.x0 && s.x0 < gutter.x1) {
      flushStretch();
      spanning.push(s);
    } else {
      flushSpanning();
      stretch.push(s);
    }
  }
  flushStretch();
  flushSpanning();
  return out;
}

/**
 * A vertical gutter between columns: an x range at least `minGutter` wide that no segment crosses, or failing
 * that, as few as possible (full-width lines). The two sides must read as columns of text side by side: long
 * lines on both (a lone right-aligned number, an indented line or a table's narrow cells are not columns).
 */
function findGutter(segments: Segment[]): { x0: number; x1: number } | undefined {
  if (segments.length < 6) return undefined;
  const size = median(segments.map((s) => s.size));
  const start = Math.floor(Math.min(...segments.map((s) => s.x0)));
  const end = Math.ceil(Math.max(...segments.map((s) => s.x1)));
  const cover = new Int32Array(end - start + 2);
  for (const s of segments) {
    cover[Math.floor(s.x0) - start]++;
    cover[Math.ceil(s.x1) - start]--;
  }
  for (let i = 1; i < cover.length; i++) cover[i] += cover[i - 1];
  const maxSpanning = Math.floor(segments.length * 0.35);
  for (let allowed = 0; allowed <= maxSpanning; allowed++) {
    let best: { x0: number; x1: number; width: number } | undefined;
    for (let a = 0; a < cover.length - 1;) {
      if (cover[a] > allowed) {
        a++;
        continue;
      }
      let b = a;
      while (b < cover.length - 1 && cover[b] <= allowed) b++;
      const gap = { x0: start + a, x1: start + b, width: b - a };
      a = b;
      if (gap.width < minGutter * size) continue;
      const left = segments.filter((s) => s.x1 <= gap.x0);
      const right = segments.filter((s) => s.x0 >= gap.x1);
      if (segments.length - left.length - right.length > allowed) continue;
      if (!sideBySideColumns(left, right)) continue;
      if (!best || gap.width > best.width) best = gap;
    }
    if (best) return best;
  }
  return undefined;
}

function sideBySideColumns(left: Segment[], right: Segment[]): boolean {
  if (left.length < 3 || right.length < 3) return false;
  if (median(left.map((s) => s.chars)) < minColumnLineChars || median(right.map((s) => s.chars)) < minColumnLineChars)
    return false;
  const span = (ss: Segment[]) => [Math.min(...ss.map((s) => s.top)), Math.max(...ss.map((s) => s.bottom))];
  const [lt, lb] = span(left);
  const [rt, rb] = span(right);
  const overlap = Math.min(lb, rb) - Math.max(lt, rt);
  return overlap > 0.3 * Math.min(lb - lt, rb - rt);
}

/** One flow's rows as text blocks and tables, top to bottom. */
function blocksOf(flow: Segment[], rtl: boolean): Block[] {
  const byRow = new Map<number, Segment[]>();
  for (const s of flow) byRow.set(s.row, [...(byRow.get(s.row) ?? []), s]);
  const rows = [...byRow.values()]
    .map((ss) => ss.sort((a, b) => a.x0 - b.x0))
    .sort((a, b) => a[0].top - b[0].top || a[0].row - b[0].row);
  const blocks: Block[] = [];
  let text: Line[] = [];
  const flushText = () => {
    if (text.length > 0) blocks.push({ kind: 'text', lines: text });
    text = [];
  };
  for (let i = 0; i < rows.length;) {
    // The longest stretch of rows of two or more segments, close together, that makes a table.
    let j = i;
    while (j < rows.length && rows[j].length >= 2 && (j === i || closeRows(rows[j - 1], rows[j]))) j++;
    const table = j - i >= 3 ? tableOf(rows.slice(i, j), rtl) : undefined;
    const columns = !table && j - i >= 2 ? textColumnsOf(rows, i, j, rtl) : undefined;
    if (table) {
      flushText();
      blocks.push(...table);
      i = j;
    } else if (columns) {
      flushText();
      blocks.push(...columns.blocks);
      i = columns.end;
    } else {
      text.push(lineOf(rows[i].flatMap((s) => s.runs)));
      i++;
    }
  }
  flushText();
  return blocks;
}

/**
 * Rows that are not a table but two blocks of text side by side (a letterhead: the sender's address beside the
 * invoice's number and date), read block by block. Not a label with its figure at the right margin: every block
 * holds words, not numbers only.
 */
function textColumnsOf(
  rows: Segment[][],
  from: number,
  to: number,
  rtl: boolean,
): { blocks: Block[]; end: number } | undefined {
  const all = rows.slice(from, to).flat();
  const size = median(all.map((s) => s.size));
  const columns = columnsOf(all, minGutter * size);
  if (columns.length < 2) return undefined;
  // A segment of a block lies within its x range, give or take a letter (a line a little longer than the rest).
  const near = (s: Segment, [x0, x1]: [number, number]) => s.x0 >= x0 - size && s.x1 <= x1 + size;
  // The lines just below that stay within one block carry it on (a due date under the invoice's date).
  let end = to;
  while (
    end < rows.length &&
    closeRows(rows[end - 1], rows[end]) &&
    columns.some((c) => rows[end].every((s) => near(s, c)))
  )
    end++;
  const blocks = columns.map((_, k) =>
    rows.slice(from, end).map((row) => row.filter((s) => columns.findIndex((c) => near(s, c)) === k)),
  );
  const wordy = (cells: Segment[]) =>
    cells.length > 0 &&
    median(cells.map((s) => s.chars)) >= 12 &&
    cells.filter((s) => /\p{L}{2}/u.test(s.runs.map((r) => r.text).join(' '))).length > cells.length / 2;
  if (!blocks.every((b) => wordy(b.flat()))) return undefined;
  if (rtl) blocks.reverse();
  return {
    blocks: blocks.map((b) => ({
      kind: 'text',
      lines: b.filter((cells) => cells.length > 0).map((cells) => lineOf(cells.flatMap((s) => s.runs))),
    })),
    end,
  };
}

const closeRows = (above: Segment[], below: Segment[]) => {
  const size = Math.max(...above.map((s) => s.size), ...below.map((s) => s.size));
  return Math.min(...below.map((s) => s.top)) - Math.max(...above.map((s) => s.bottom)) < 1.5 * size;
};

/**
 * Rows that line up into a grid as a table: its columns are the gaps in x coverage shared by every row. Each row
 * becomes one line, "Header: cell; Header: cell", with the row's box; long tables are cut into groups of rows.
 */
function tableOf(rows: Segment[][], rtl: boolean): Block[] | undefined {
  const all = rows.flat();
  if (median(all.map((s) => s.chars)) > maxCellChars) return undefined;
  const size = median(all.map((s) => s.size));
  const columns = columnsOf(all, 0.5 * size);
  if (rtl) columns.reverse(); // a right-to-left table's first column is its rightmost
  // Two columns of three rows are as often a letterhead (sender beside recipient) as a table.
  if (columns.length < 2 || (columns.length === 2 && rows.length < 4)) return undefined;
  const cells = rows.map((row) =>
    columns.map(([x0, x1]) => {
      const inColumn = row.filter((s) => s.x0 >= x0 - 0.5 && s.x1 <= x1 + 0.5);
      return inColumn.length > 0 ? lineOf(inColumn.flatMap((s) => s.runs)).text : '';
    }),
  );
  // Most rows fill at least two columns (a grid, not a list with an odd number at the margin).
  if (cells.filter((c) => c.filter((t) => t !== '').length >= 2).length < 0.8 * rows.length) return undefined;
  const hasHeader = cells[0].every((t) => t !== '' && !/\d/.test(t));
  const header = hasHeader ? cells[0] : [];
  const body = rows.map((row, i) => ({ box: rowBox(row), cells: cells[i] })).slice(hasHeader ? 1 : 0);
  // As tables of other formats are read (tables.ts): a row on its own, labelled by the header; a long table in
  // groups of Markdown-like rows under the header, each line with its box.
  if (body.length <= maxRowsOnTheirOwn)
    return body.map((r) => ({ kind: 'table', rows: [{ text: rowText(header, r.cells), box: r.box }] }));
  const markdown = (c: string[]) => `| ${c.join(' | ')} |`;
  const headerLine = hasHeader ? [{ text: markdown(header), box: rowBox(rows[0]) }] : [];
  const groups: Block[] = [];
  const perGroup = Math.ceil(body.length / Math.ceil(body.length / rowsPerGroup));
  for (let i = 0; i < body.length; i += perGroup)
    groups.push({
      kind: 'table',
      rows: [...headerLine, ...body.slice(i, i + perGroup).map((r) => ({ text: markdown(r.cells), box: r.box }))],
    });
  return groups;
}

/**
 * A row labelled by the header; a row whose first column is empty is a summary under the table ("Subtotal" and its
 * amount under the last columns), whose first cell labels the rest.
 */
function rowText(header: string[], cells: string[]): string {
  if (cells[0] !== '') return labelledRow(header, cells);
  const [label, ...values] = cells.filter((c) => c !== '');
  return values.length > 0 ? `${label}: ${values.join('; ')}` : label;
}

const rowBox = (row: Segment[]): Box =>
  union(row.map((s) => ({ x: s.x0, y: s.top, width: s.x1 - s.x0, height: s.bottom - s.top })));

/** The x ranges of a table's columns: the stretches of x covered by cells, between gaps at least `minGap` wide. */
function columnsOf(cells: Segment[], minGap: number): [number, number][] {
  const spans = cells.map((s) => [s.x0, s.x1]).sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [x0, x1] of spans) {
    const last = out[out.length - 1];
    if (last && x0 - last[1] < minGap) last[1] = Math.max(last[1], x1);
    else out.push([x0, x1]);
  }
  return out;
}

const bidi = bidiFactory();

/** The runs of one line (visual order, left to right) as a line in logical order, with its box. */
export function lineOf(runs: TextRun[]): Line {
  const sorted = [...runs].sort((a, b) => a.x - b.x);
  let visual = '';
  let end = -Infinity;
  for (const r of sorted) {
    // pdf.js gives a right-to-left run in logical order; back to visual order, so the whole line is reordered
    // at once (runs placed word by word, numbers and Latin words among Arabic ones).
    const shown = r.dir === 'rtl' ? [...r.text].reverse().join('') : r.text;
    // A gap wider than a fifth of the font size separates words the PDF did not space.
    visual += visual && r.x - end > 0.2 * r.size && !/\s$/.test(visual) && !/^\s/.test(shown) ? ` ${shown}` : shown;
    end = r.x + r.width;
  }
  visual = visual.replace(/\s+/g, ' ').trim();
  const text = rtlChars.test(visual) ? logicalOrder(visual) : visual;
  // After reordering: a lam-alef ligature is one character until then, two in logical order after.
  return {
    text: text.replace(presentationForms, (forms) => forms.normalize('NFKC')),
    box: scaleBox(lineBox(sorted), 1),
  };
}

/** Latin ligatures (ﬁ) and Arabic presentation forms, which fonts map some glyphs to; NFKC gives the letters. */
const presentationForms = /[\ufb00-\ufdff\ufe70-\ufefc]+/g;

/** Visual-order text in logical order: UAX #9 reordering, which undoes itself. */
function logicalOrder(visual: string): string {
  const levels = bidi.getEmbeddingLevels(visual, isMostlyRtl(visual) ? 'rtl' : 'ltr');
  return bidi.getReorderedString(visual, levels);
}

function isMostlyRtl(text: string): boolean {
  return (text.match(rtlCharsGlobal)?.length ?? 0) > (text.match(ltrCharsGlobal)?.length ?? 0);
}
