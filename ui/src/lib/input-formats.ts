// What a run's input should look like, said for the agent's input node (model/input-parsing.ts reads it), so a
// person pastes or picks the right thing instead of learning the format from a refusal.
export type InputFormat = 'auto' | 'json' | 'csv' | 'tsv' | 'lines' | 'files';

export const INPUT_HELP: Record<InputFormat, { help: string; placeholder: string }> = {
  csv: {
    help: 'A table as CSV, its first line naming the columns: each row is one item. A spreadsheet saves one with “Download as CSV”.',
    placeholder: 'invoice,vendor,amount\nINV-1,Acme,120.50',
  },
  tsv: {
    help: 'Rows copied from a spreadsheet (tab-separated), the first naming the columns: each row is one item.',
    placeholder: 'invoice\tvendor\tamount\nINV-1\tAcme\t120.50',
  },
  json: {
    help: 'JSON: a list of records in square brackets, each record one item.',
    placeholder: '[{"payee": "Acme", "amount": 120}]',
  },
  lines: { help: 'Text, one item per line.', placeholder: 'One item per line' },
  files: { help: 'The ids of uploaded files, as a JSON list.', placeholder: '["file-id"]' },
  auto: {
    help: 'A table as CSV (its first line naming the columns), a JSON list, or text with one item per line.',
    placeholder: 'invoice,vendor,amount\nINV-1,Acme,120.50',
  },
};
