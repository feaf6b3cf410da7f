// The paragraphs of an HTML document (a web page's main text, or a Word document as mammoth writes it): one per
// block element, in document order, under their section's heading, and a data table as rows that keep their
// header (tables.ts). A table used for layout (one row or one column, or tables inside it) is read as the blocks
// in its cells.
import { underHeadings, type Block } from './headings';
import { tableParagraphTexts } from './tables';

export interface DomNode {
  nodeType: number;
  tagName?: string;
  textContent: string | null;
  childNodes: Iterable<DomNode>;
  children: Iterable<DomNode>;
  getAttribute?(name: string): string | null;
  querySelector(selector: string): DomNode | null;
  querySelectorAll(selector: string): Iterable<DomNode>;
}
// linkedom's types describe a browser window (the project has no DOM lib); these are the parts used here.
// Loaded on first use (required, so that reading stays synchronous): a service that never reads a web page or a Word
// document does not hold it.
export const dom = (html: string) => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { parseHTML }: typeof import('linkedom') = require('linkedom');
  return (parseHTML(html) as unknown as { document: DomNode & { body: DomNode | null } }).document;
};

const blockSelector = 'h1,h2,h3,h4,h5,h6,p,li,pre,blockquote,dt,dd,figcaption,caption';
const blockTags = new Set(blockSelector.toUpperCase().split(','));
const headingTags = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
const inlineTags = new Set(
  'A,ABBR,B,BDI,BDO,CITE,CODE,DATA,DFN,EM,FONT,I,INS,DEL,KBD,LABEL,MARK,Q,S,SAMP,SMALL,SPAN,STRONG,SUB,SUP,TIME,U,VAR'.split(
    ',',
  ),
);

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const isElement = (n: DomNode) => n.nodeType === 1;
const elements = (n: DomNode) => [...n.children].filter(isElement);

/** The text a reader sees: words of neighbouring blocks and cells (and either side of a line break) apart. */
export function textOf(node: DomNode): string {
  if (node.nodeType === 3) return node.textContent ?? '';
  if (!isElement(node)) return '';
  const inner = [...node.childNodes].map(textOf).join('');
  return inlineTags.has(node.tagName!) ? inner : ` ${inner} `;
}

/**
 * Paragraph texts of `root`'s blocks in document order (table groups hold one row per line), each under the
 * heading of its section (headings.ts).
 */
export function blockTexts(root: DomNode): string[] {
  const out: Block[] = [];
  const walk = (el: DomNode) => {
    for (const child of elements(el)) {
      if (child.tagName === 'TABLE') table(child);
      else if (blockTags.has(child.tagName!) && !child.querySelector(`${blockSelector},table`))
        out.push({
          text: child.tagName === 'PRE' ? textOf(child) : oneLine(textOf(child)),
          heading: headingTags.has(child.tagName!),
        });
      else walk(child);
    }
  };
  const table = (el: DomNode) => {
    const rows = tableRows(el);
    const columns = Math.max(0, ...rows.map((r) => r.length));
    const caption = elements(el).find((c) => c.tagName === 'CAPTION');
    if (caption) out.push({ text: oneLine(textOf(caption)) });
    if (rows.length >= 2 && columns >= 2 && !el.querySelector('td table, th table')) {
      const texts = tableParagraphTexts(rows.map((r) => r.map((c) => (c ? textOf(c) : ''))));
      out.push(...texts.map((text) => ({ text })));
      return;
    }
    for (const cell of new Set(rows.flat())) {
      if (!cell) continue;
      if (cell.querySelector(`${blockSelector},table`)) walk(cell);
      else out.push({ text: oneLine(textOf(cell)) });
    }
  };
  walk(root);
  return underHeadings(out);
}

/**
 * The cells of a table's own rows (not those of tables inside it) on a grid. A cell spanning rows is repeated in
 * each (a value that holds for all of them); a cell spanning columns is repeated in the header row and followed
 * by empty places below it, so that every value lines up under its heading.
 */
function tableRows(table: DomNode): (DomNode | null)[][] {
  const rows: DomNode[] = [];
  for (const part of elements(table)) {
    if (part.tagName === 'TR') rows.push(part);
    else if (['THEAD', 'TBODY', 'TFOOT'].includes(part.tagName!))
      rows.push(...elements(part).filter((r) => r.tagName === 'TR'));
  }
  const span = (cell: DomNode, name: string) => Math.min(50, Math.max(1, Number(cell.getAttribute?.(name)) || 1));
  const grid: (DomNode | null)[][] = rows.map(() => []);
  rows.forEach((row, i) => {
    let column = 0;
    for (const cell of elements(row).filter((c) => c.tagName === 'TD' || c.tagName === 'TH')) {
      while (grid[i][column] !== undefined) column++; // taken by a cell spanning down from above
      for (let k = 0; k < span(cell, 'colspan'); k++)
        for (let r = i; r < Math.min(rows.length, i + span(cell, 'rowspan')); r++)
          grid[r][column + k] = i === 0 || k === 0 ? cell : null;
      column += span(cell, 'colspan');
    }
  });
  return grid.map((r) => Array.from(r, (c) => c ?? null));
}
