// Tables as passages: a row keeps its cells together and says what each value is, from the header, so "8 hours"
// is found as "Support hours: 8 hours" beside "Plan: Silver". Shared by spreadsheets, CSV, Word and web pages.
import { maxPassageChars } from './layout';

/** A row written as "column: value; …" (a value under an empty heading stands alone). */
export function labelledRow(header: string[], cells: string[]): string {
  return cells
    .map((c, j) => (c === '' ? '' : header[j] ? `${header[j]}: ${c}` : c))
    .filter(Boolean)
    .join('; ');
}

/** Rows beyond this many are grouped, so a long table is a few passages rather than one per row. */
export const maxRowsOnTheirOwn = 20;
/** A group small enough for the embedding model to read whole (it reads ~256 tokens). */
const rowsPerGroup = 10;

/**
 * The paragraphs of a table whose first row is its header: each row on its own, labelled by the header, or for a
 * long table groups of rows as Markdown-like lines under the header, each group within one passage.
 */
export function tableParagraphTexts(rows: string[][]): string[] {
  const [header, ...body] = rows.map((r) => r.map((c) => c.replace(/\s+/g, ' ').trim()));
  const data = body.filter((r) => r.some((c) => c !== ''));
  if (data.length <= maxRowsOnTheirOwn) return data.map((r) => labelledRow(header, r));
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  // Groups of even size (37 rows: 10, 9, 9, 9), each also within a passage's length.
  const size = Math.ceil(data.length / Math.ceil(data.length / rowsPerGroup));
  const groups: string[] = [];
  let current: string[] = [];
  for (const row of data) {
    const next = line(row);
    const length = [line(header), ...current, next].join('\n').length;
    if (current.length === size || (current.length > 0 && length > maxPassageChars)) {
      groups.push([line(header), ...current].join('\n'));
      current = [];
    }
    current.push(next);
  }
  groups.push([line(header), ...current].join('\n'));
  return groups;
}
