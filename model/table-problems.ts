// Why a table given as a run's input cannot be read, in words a person can act on: which line and what usually
// causes it, instead of csv-parse's own message ("Invalid Record Length: columns length is 2, got 3 on line 2").
// JSON's counterpart is model/json-slip.ts.

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
