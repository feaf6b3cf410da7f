// Turns a run's input string into items, as the agent's input node says. Used by the API (to answer 422
// before a run starts) and by the run's first activity, so both agree on what an input means.
import { parse as parseCsv } from 'csv-parse/sync';
import type { AgentNode } from './agent';
import type { ItemData } from './interpreter';
import { jsonProblem } from './json-slip';
import { tableProblem } from './table-problems';

export class InputError extends Error {}

export const maxItemsPerRun = 100_000;

function fromJson(text: string): ItemData[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InputError(`input is not valid JSON: ${jsonProblem(text) ?? 'it cannot be read'}`);
  }
  const list = Array.isArray(value) ? value : [value];
  return list.map((v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as ItemData) : { value: v }));
}

function fromDelimited(text: string, delimiter: ',' | '\t'): ItemData[] {
  try {
    return parseCsv(text, { columns: true, delimiter, skip_empty_lines: true, trim: true, bom: true });
  } catch (err) {
    const header = text.split(/\r?\n/, 1)[0];
    throw new InputError(`input is not valid ${delimiter === ',' ? 'CSV' : 'TSV'}: ${tableProblem(err, header)}`);
  }
}

function fromLines(text: string): ItemData[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .map((text) => ({ text }));
}

function fromFiles(text: string): ItemData[] {
  const items = fromJson(text);
  const refs = items.map((i) => i.file_id ?? i.value);
  if (refs.some((r) => typeof r !== 'string')) throw new InputError('input must be a JSON list of file ids');
  return refs.map((file_id) => ({ file_id }));
}

/** Whether a line reads as a table's header: two or more distinct names, each a word such as `invoice_number`. */
function namesColumns(line: string, delimiter: string): boolean {
  const names = line.split(delimiter).map((n) => n.trim());
  return (
    names.length > 1 && new Set(names).size === names.length && names.every((n) => /^[A-Za-z_][\w.-]{0,63}$/.test(n))
  );
}

function detect(text: string): ItemData[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) return fromJson(trimmed);
  const [header, second] = trimmed.split(/\r?\n/, 2);
  const delimiter =
    second === undefined ? undefined : header.includes('\t') ? '\t' : header.includes(',') ? ',' : undefined;
  if (delimiter) {
    try {
      return fromDelimited(trimmed, delimiter);
    } catch (err) {
      // A first line of column names (email,message) is a table with a bad row, said as that: read as lines of text,
      // its items would go on without their fields. Anything else is prose with commas: one item per line.
      if (namesColumns(header, delimiter)) throw err;
    }
  }
  return fromLines(trimmed);
}

export function parseInput(node: Extract<AgentNode, { kind: 'input' }>, raw: string): ItemData[] {
  const input = raw.replace(/^\uFEFF/, ''); // a byte-order mark from a spreadsheet export is not data
  if (input.trim() === '') throw new InputError('input is empty: give the data the run should process');
  const items =
    node.format === 'json'
      ? fromJson(input)
      : node.format === 'csv'
        ? fromDelimited(input, ',')
        : node.format === 'tsv'
          ? fromDelimited(input, '\t')
          : node.format === 'lines'
            ? fromLines(input)
            : node.format === 'files'
              ? fromFiles(input)
              : detect(input);
  if (items.length === 0) throw new InputError('input holds no items');
  if (items.length > maxItemsPerRun) {
    throw new InputError(
      `input holds ${items.length} items; a run takes at most ${maxItemsPerRun} (split it into batches)`,
    );
  }
  return items;
}

/**
 * A run's items. A scheduled run with no input is one empty item: its schedule takes none (model/trigger.ts), and a
 * scheduled run counts as a run even when there is no new data (the agent fetches what it works on itself).
 */
export function itemsOfRun(node: Extract<AgentNode, { kind: 'input' }>, run: { input: string; trigger: string }) {
  if (run.trigger === 'schedule' && run.input === '') return [{}] as ItemData[];
  return parseInput(node, run.input);
}
