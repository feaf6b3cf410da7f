// renderOutputFile: the files an output node writes, in each format.
import assert from 'node:assert/strict';
import ExcelJS from 'exceljs';
import { renderOutputFile } from '../../activities/output-files';

const rows = [
  { vendor: 'ACME, Inc.', amount: 1200.5, note: 'said "hi"', meta: { region: 'EU' } },
  { vendor: 'Globex', amount: 30, tags: ['a', 'b'] },
];

async function readSheet(content: Buffer): Promise<ExcelJS.Worksheet> {
  const book = new ExcelJS.Workbook();
  await book.xlsx.load(content as unknown as ArrayBuffer);
  const sheet = book.getWorksheet('Results');
  assert.ok(sheet, 'the workbook has a "Results" sheet');
  return sheet;
}

describe('renderOutputFile', () => {
  describe('csv', () => {
    it('writes a header of all fields in first-seen order, quotes commas and quotes, JSON-encodes objects', async () => {
      const file = await renderOutputFile('csv', 'report', rows);
      assert.equal(file.name, 'report.csv');
      assert.equal(file.contentType, 'text/csv; charset=utf-8');
      assert.equal(
        file.content.toString('utf8'),
        'vendor,amount,note,meta,tags\n' +
          '"ACME, Inc.",1200.5,"said ""hi""","{""region"":""EU""}",\n' +
          'Globex,30,,,"[""a"",""b""]"\n',
      );
    });

    it('writes null and undefined as empty cells', async () => {
      const file = await renderOutputFile('csv', 'r', [{ a: null, b: undefined, c: 0 }]);
      assert.equal(file.content.toString('utf8'), 'a,b,c\n,,0\n');
    });

    it('uses `fields` to select and order columns', async () => {
      const file = await renderOutputFile('csv', 'r', rows, ['amount', 'vendor']);
      assert.equal(file.content.toString('utf8'), 'amount,vendor\n1200.5,"ACME, Inc."\n30,Globex\n');
    });

    it('writes booleans as true/false', async () => {
      const file = await renderOutputFile('csv', 'r', [{ ok: true, bad: false }]);
      assert.equal(file.content.toString('utf8'), 'ok,bad\ntrue,false\n');
    });
  });

  describe('markdown', () => {
    it('writes a table, escaping pipes and flattening newlines', async () => {
      const file = await renderOutputFile('markdown', 'summary', [
        { name: 'a|b', text: 'line1\nline2', n: 1 },
        { name: 'c', obj: { k: 'v|w' } },
      ]);
      assert.equal(file.name, 'summary.md');
      assert.equal(file.contentType, 'text/markdown; charset=utf-8');
      assert.equal(
        file.content.toString('utf8'),
        '| name | text | n | obj |\n' +
          '| --- | --- | --- | --- |\n' +
          '| a\\|b | line1 line2 | 1 |  |\n' +
          '| c |  |  | {"k":"v\\|w"} |\n',
      );
    });

    it('uses `fields` to select and order columns', async () => {
      const file = await renderOutputFile('markdown', 'm', [{ a: 1, b: 2, c: 3 }], ['c', 'a']);
      assert.equal(file.content.toString('utf8'), '| c | a |\n| --- | --- |\n| 3 | 1 |\n');
    });
  });

  describe('json', () => {
    it('writes the rows as pretty-printed JSON, unchanged', async () => {
      const file = await renderOutputFile('json', 'items', rows);
      assert.equal(file.name, 'items.json');
      assert.equal(file.contentType, 'application/json');
      assert.equal(file.content.toString('utf8'), JSON.stringify(rows, null, 2));
      assert.deepEqual(JSON.parse(file.content.toString('utf8')), rows);
    });
  });

  describe('xlsx', () => {
    it('writes a "Results" sheet with a bold header row and typed cells', async () => {
      const file = await renderOutputFile('xlsx', 'sheet', rows);
      assert.equal(file.name, 'sheet.xlsx');
      assert.equal(file.contentType, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
      assert.equal(file.content.subarray(0, 2).toString('latin1'), 'PK', 'an xlsx file is a zip archive');

      const sheet = await readSheet(file.content);
      const header = sheet.getRow(1).values as unknown[];
      assert.deepEqual(header.slice(1), ['vendor', 'amount', 'note', 'meta', 'tags']);
      assert.equal(sheet.getRow(1).font?.bold, true);
      assert.equal(sheet.getCell('A2').value, 'ACME, Inc.');
      assert.equal(sheet.getCell('B2').value, 1200.5);
      assert.equal(sheet.getCell('D2').value, '{"region":"EU"}');
      assert.equal(sheet.getCell('B3').value, 30);
      assert.equal(sheet.getCell('E3').value, '["a","b"]');
      assert.equal(sheet.rowCount, 3);
    });

    it('uses `fields` to select and order columns', async () => {
      const file = await renderOutputFile('xlsx', 'sheet', rows, ['amount', 'vendor']);
      const sheet = await readSheet(file.content);
      assert.deepEqual((sheet.getRow(1).values as unknown[]).slice(1), ['amount', 'vendor']);
      assert.deepEqual((sheet.getRow(3).values as unknown[]).slice(1), [30, 'Globex']);
      assert.equal(sheet.columnCount, 2);
    });
  });

  describe('file names', () => {
    it('adds the format extension to a bare base name', async () => {
      assert.equal((await renderOutputFile('csv', 'out', [])).name, 'out.csv');
      assert.equal((await renderOutputFile('markdown', 'out', [])).name, 'out.md');
      assert.equal((await renderOutputFile('json', 'out', [])).name, 'out.json');
      assert.equal((await renderOutputFile('xlsx', 'out', [])).name, 'out.xlsx');
    });

    it('keeps a name that already has the matching extension', async () => {
      assert.equal((await renderOutputFile('csv', 'routed-invoices.csv', [{ a: 1 }])).name, 'routed-invoices.csv');
      assert.equal((await renderOutputFile('xlsx', 'orders.xlsx', [{ a: 1 }])).name, 'orders.xlsx');
    });

    it('adds the extension to a base name that contains a dot', async () => {
      assert.equal((await renderOutputFile('xlsx', 'report.v2', [{ a: 1 }])).name, 'report.v2.xlsx');
    });
  });
});
