// Files an output node generates from the items it collected.
import { stringify } from 'csv-stringify/sync';

export type OutputFormat = 'json' | 'csv' | 'xlsx' | 'markdown';

const contentTypes: Record<OutputFormat, string> = {
  json: 'application/json',
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  markdown: 'text/markdown; charset=utf-8',
};
const extensions: Record<OutputFormat, string> = { json: 'json', csv: 'csv', xlsx: 'xlsx', markdown: 'md' };

function cell(v: unknown): string | number | boolean {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return String(v); // csv-stringify would write true as 1 and false as ''
  if (typeof v === 'object') return JSON.stringify(v);
  return v as string | number | boolean;
}

function columnsOf(rows: Record<string, unknown>[], fields?: string[]): string[] {
  if (fields && fields.length > 0) return fields;
  const seen = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r)) seen.add(k);
  return [...seen];
}

const withExtension = (format: OutputFormat, baseName: string) => {
  const extension = `.${extensions[format]}`;
  return baseName.toLowerCase().endsWith(extension) ? baseName : `${baseName}${extension}`;
};

/** A file written as given (a report the model wrote, say); JSON (already checked to parse) is pretty-printed. */
export function textOutputFile(
  format: Exclude<OutputFormat, 'xlsx'>,
  baseName: string,
  text: string,
): { name: string; contentType: string; content: Buffer } {
  const body = format === 'json' ? JSON.stringify(JSON.parse(text), null, 2) : text;
  return { name: withExtension(format, baseName), contentType: contentTypes[format], content: Buffer.from(body) };
}

export async function renderOutputFile(
  format: OutputFormat,
  baseName: string,
  rows: Record<string, unknown>[],
  fields?: string[],
): Promise<{ name: string; contentType: string; content: Buffer }> {
  const name = withExtension(format, baseName);
  const columns = columnsOf(rows, fields);
  let content: Buffer;
  if (format === 'json') {
    content = Buffer.from(JSON.stringify(rows, null, 2));
  } else if (format === 'csv') {
    content = Buffer.from(
      stringify(
        rows.map((r) => columns.map((c) => cell(r[c]))),
        { header: true, columns },
      ),
    );
  } else if (format === 'markdown') {
    const esc = (v: unknown) => String(cell(v)).replace(/\|/g, '\\|').replace(/\n/g, ' ');
    const lines = [
      `| ${columns.map(esc).join(' | ')} |`,
      `| ${columns.map(() => '---').join(' | ')} |`,
      ...rows.map((r) => `| ${columns.map((c) => esc(r[c])).join(' | ')} |`),
    ];
    content = Buffer.from(lines.join('\n') + '\n');
  } else {
    const { default: ExcelJS } = await import('exceljs'); // loaded on first use
    const book = new ExcelJS.Workbook();
    const sheet = book.addWorksheet('Results');
    sheet.columns = columns.map((c) => ({ header: c, key: c, width: Math.min(40, Math.max(10, c.length + 2)) }));
    for (const r of rows) sheet.addRow(Object.fromEntries(columns.map((c) => [c, cell(r[c])])));
    sheet.getRow(1).font = { bold: true };
    content = Buffer.from(await book.xlsx.writeBuffer());
  }
  return { name, contentType: contentTypes[format], content };
}
