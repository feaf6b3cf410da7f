// Why a run's input cannot be read, in words a person can act on: where it goes wrong (line and column as an editor
// counts them) and what usually causes it, instead of the JSON or CSV parser's own message ("Unexpected token 'p',
// "payee,amou"... is not valid JSON", "Invalid Record Length: columns length is 2, got 3 on line 2").

/** Line and column (both from 1) of a character offset in the text. */
function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before[before.length - 1].length + 1 };
}

/** The text at an offset, a few characters of it, on one line. */
function near(text: string, offset: number): string {
  const rest = text.slice(offset).split(/\r?\n/)[0];
  return rest.length > 20 ? `${rest.slice(0, 20)}…` : rest;
}

/** Whether the parser's refusal of a text is that it ended (and not a mistake inside it). */
function endedEarly(text: string, err: unknown): boolean {
  const message = (err as Error).message;
  const position = /at position (\d+)/.exec(message)?.[1];
  return /end of JSON/.test(message) || Number(position) === text.length;
}

/**
 * Where the text stops being JSON: the first character that no JSON could continue with, or null when the text is
 * a valid beginning that ends too soon. Found by parsing prefixes rather than from the parser's message, whose wording
 * and position format change between Node versions. A prefix either could still become JSON (it fails as "ends too
 * soon", or parses) or already holds the mistake, and every longer prefix then holds it too, so a binary search finds
 * the first bad character.
 */
export function jsonMistakeAt(text: string): number | null {
  const holdsMistake = (k: number) => {
    const prefix = text.slice(0, k);
    try {
      JSON.parse(prefix);
      return false;
    } catch (err) {
      return !endedEarly(prefix, err);
    }
  };
  if (!holdsMistake(text.length)) return null;
  let low = 0; // holds no mistake (the empty text only ends too soon)
  let high = text.length; // holds it
  while (high - low > 1) {
    const mid = (low + high) >> 1;
    if (holdsMistake(mid)) high = mid;
    else low = mid;
  }
  return high - 1;
}

const completes = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** What is wrong with a text that is not JSON, for "input is not valid JSON: …". */
export function jsonProblem(text: string): string {
  const at = jsonMistakeAt(text);
  if (at === null) {
    const { line } = lineAndColumn(text, text.trimEnd().length);
    return `it ends too soon (line ${line}): a closing ] or }, or a closing quote, is missing`;
  }
  const leading = text.length - text.trimStart().length;
  if (at === leading) {
    return `it starts with “${near(text, at)}”, and JSON starts with [ (a list of items) or { (one item)`;
  }
  const { line, column } = lineAndColumn(text, at);
  if (text[at] === '\n' || text[at] === '\r')
    return `line ${line} ends inside quotes: close the quote before the line ends`;
  if (completes(text.slice(0, at))) {
    return `it is complete before line ${line}, column ${column} (“${near(text, at)}”): remove what follows, or put all items in one list [ … ] with commas between them`;
  }
  return `line ${line}, column ${column}, at “${near(text, at)}”: check for a missing comma, quote or bracket just before it`;
}

interface CsvError {
  code?: string;
  lines?: number;
  record?: unknown[];
  columns?: unknown[];
}

/** What is wrong with a table csv-parse refused, for "input is not valid CSV: …"; its own message when unknown. */
export function tableProblem(err: unknown, header: string): string {
  const e = err as CsvError & Error;
  const line = e.lines;
  switch (e.code) {
    case 'CSV_RECORD_INCONSISTENT_COLUMNS':
      return `line ${line} has ${e.record?.length} values, and the header (line 1) names ${e.columns?.length} columns: ${header.length > 80 ? `${header.slice(0, 80)}…` : header}`;
    case 'CSV_QUOTE_NOT_CLOSED':
      return `a quote opened on line ${line} is never closed`;
    case 'INVALID_OPENING_QUOTE':
    case 'CSV_INVALID_CLOSING_QUOTE':
      return `line ${line} has a quote inside a value: put the whole value in quotes and write a quote inside it twice ("")`;
    default:
      return e.message;
  }
}
