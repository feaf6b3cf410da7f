// parseInput: how a run's input string becomes items for each input-node format.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { InputError, maxItemsPerRun, parseInput } from '../../model/input-parsing';
import type { AgentNode } from '../../model/agent';

type InputNode = Extract<AgentNode, { kind: 'input' }>;
const node = (format: InputNode['format']): InputNode => ({ kind: 'input', id: 'in', format });

function assertInputError(fn: () => unknown, message: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InputError, `expected an InputError, got ${String(err)}`);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

describe('parseInput', () => {
  describe('json', () => {
    it('turns an array of objects into items', () => {
      assert.deepEqual(parseInput(node('json'), '[{"a":1},{"a":2,"b":"x"}]'), [{ a: 1 }, { a: 2, b: 'x' }]);
    });

    it('turns a single object into one item', () => {
      assert.deepEqual(parseInput(node('json'), '{"invoice":"A-1","amount":10}'), [{ invoice: 'A-1', amount: 10 }]);
    });

    it('wraps scalars, nulls and nested arrays in { value }', () => {
      assert.deepEqual(parseInput(node('json'), '[1, "two", true, null, [3]]'), [
        { value: 1 },
        { value: 'two' },
        { value: true },
        { value: null },
        { value: [3] },
      ]);
      assert.deepEqual(parseInput(node('json'), '42'), [{ value: 42 }]);
      assert.deepEqual(parseInput(node('json'), '"hello"'), [{ value: 'hello' }]);
    });

    it('rejects garbage with an InputError that says it is not valid JSON', () => {
      assertInputError(() => parseInput(node('json'), '{"a":'), /^input is not valid JSON: /);
      assertInputError(() => parseInput(node('json'), 'hello'), /^input is not valid JSON: /);
    });

    it("says where the JSON goes wrong and what usually causes it, not the parser's words", () => {
      const problem = (text: string) => {
        try {
          parseInput(node('json'), text);
        } catch (err) {
          return (err as Error).message.replace(/^input is not valid JSON: /, '');
        }
        throw new Error('parsed');
      };
      // The console's check as it is typed says the same (model/json-slip.ts; test/unit/schedule-check.test.ts).
      assert.equal(
        problem('[{"a": 1},\n {"a": 2 "b": 3}]'),
        'something is missing near line 2, column 10 — check for a missing comma, quote or bracket',
      );
      assert.equal(
        problem('payee,amount\nAcme,120'),
        'it starts with “payee,amount” near line 1, column 1 — JSON starts with [ (a list of items) or { (one item)',
      );
      assert.equal(
        problem('{"a": 1}\n{"a": 2}'),
        'there is more after the end near line 2, column 1 — to give several items, put them in one list: [{…}, {…}]',
      );
      assert.doesNotMatch(problem('{"a": "unterminated'), /Unexpected|position/);
    });

    it('rejects an empty array as holding no items', () => {
      assertInputError(() => parseInput(node('json'), '[]'), 'input holds no items');
    });
  });

  describe('csv', () => {
    it('uses the header row as field names, handles quoted commas and doubled quotes, trims', () => {
      const text = 'name,note,amount\n"Smith, J","said ""hi""", 12 \nLee,plain,3\n';
      assert.deepEqual(parseInput(node('csv'), text), [
        { name: 'Smith, J', note: 'said "hi"', amount: '12' },
        { name: 'Lee', note: 'plain', amount: '3' },
      ]);
    });

    it('strips a UTF-8 byte order mark from the first header', () => {
      const [item] = parseInput(node('csv'), '\uFEFFid,name\n1,Ada\n');
      assert.deepEqual(Object.keys(item), ['id', 'name']);
      assert.deepEqual(item, { id: '1', name: 'Ada' });
    });

    it('accepts CRLF line endings and skips empty lines', () => {
      assert.deepEqual(parseInput(node('csv'), 'a,b\r\n1,2\r\n\r\n3,4\r\n'), [
        { a: '1', b: '2' },
        { a: '3', b: '4' },
      ]);
    });

    it('rejects rows with the wrong number of fields as invalid CSV', () => {
      assertInputError(
        () => parseInput(node('csv'), 'a,b\n1,2\n1,2,3\n'),
        'input is not valid CSV: line 3 has 3 values, and the header (line 1) names 2 columns: a,b',
      );
    });

    it('says which line has a stray or unclosed quote', () => {
      assertInputError(
        () => parseInput(node('csv'), 'a,b\n1,"open\n'),
        'input is not valid CSV: a quote opened on line 2 is never closed',
      );
      assertInputError(
        () => parseInput(node('csv'), 'a,b\n1,5" screen\n'),
        'input is not valid CSV: line 2 has a quote inside a value: put the whole value in quotes and write a quote inside it twice ("")',
      );
    });

    it('a header with no rows holds no items', () => {
      assertInputError(() => parseInput(node('csv'), 'a,b\n'), 'input holds no items');
    });
  });

  describe('tsv', () => {
    it('splits on tabs and keeps commas inside values', () => {
      assert.deepEqual(parseInput(node('tsv'), 'name\tcity\nSmith, J\tParis\n'), [{ name: 'Smith, J', city: 'Paris' }]);
    });

    it('keeps empty fields empty', () => {
      assert.deepEqual(parseInput(node('tsv'), 'a\tb\n\t2\n'), [{ a: '', b: '2' }]);
    });
  });

  describe('lines', () => {
    it('makes one { text } item per non-blank line, trimmed', () => {
      assert.deepEqual(parseInput(node('lines'), '  first line, with comma \r\n\n second\n'), [
        { text: 'first line, with comma' },
        { text: 'second' },
      ]);
    });
  });

  describe('files', () => {
    it('accepts a list of file id strings and of { file_id } objects', () => {
      assert.deepEqual(parseInput(node('files'), '["f-1", {"file_id": "f-2"}]'), [
        { file_id: 'f-1' },
        { file_id: 'f-2' },
      ]);
    });

    it('accepts a single file id string', () => {
      assert.deepEqual(parseInput(node('files'), '"f-9"'), [{ file_id: 'f-9' }]);
    });

    it('rejects entries that are not file ids', () => {
      assertInputError(() => parseInput(node('files'), '[1, 2]'), 'input must be a JSON list of file ids');
      assertInputError(() => parseInput(node('files'), '[{"name": "x.pdf"}]'), 'input must be a JSON list of file ids');
    });

    it('rejects non-JSON input', () => {
      assertInputError(() => parseInput(node('files'), 'f-1\nf-2'), /^input is not valid JSON: /);
    });
  });

  describe('auto', () => {
    it('detects a JSON array, even with surrounding whitespace', () => {
      assert.deepEqual(parseInput(node('auto'), '\n  [{"a":1}, 2]  \n'), [{ a: 1 }, { value: 2 }]);
    });

    it('detects a JSON object', () => {
      assert.deepEqual(parseInput(node('auto'), '{"a":1}'), [{ a: 1 }]);
    });

    it('detects CSV (a comma in the header and more than one line), with BOM', () => {
      assert.deepEqual(parseInput(node('auto'), '\uFEFFid,"full, name"\n1,"Lovelace, Ada"\n'), [
        { id: '1', 'full, name': 'Lovelace, Ada' },
      ]);
    });

    it('detects TSV before CSV when the header has tabs', () => {
      assert.deepEqual(parseInput(node('auto'), 'a\tb\n1,5\t2\n'), [{ a: '1,5', b: '2' }]);
    });

    it('falls back to lines when there is no delimiter in the header', () => {
      assert.deepEqual(parseInput(node('auto'), 'alpha\nbeta\n'), [{ text: 'alpha' }, { text: 'beta' }]);
    });

    it('reads prose with commas as lines, but a table with a bad row as a table and says which row', () => {
      assert.deepEqual(parseInput(node('auto'), 'Dear team, thanks\nsee you soon'), [
        { text: 'Dear team, thanks' },
        { text: 'see you soon' },
      ]);
      // The message's comma is not quoted: its row has a value too many, and the items would lose their fields.
      assertInputError(
        () => parseInput(node('auto'), 'email,message\nann@example.com,Hello, where is my order?\n'),
        'input is not valid CSV: line 2 has 3 values, and the header (line 1) names 2 columns: email,message',
      );
    });

    it('treats a single line with commas as one text item, not CSV', () => {
      assert.deepEqual(parseInput(node('auto'), 'a,b,c'), [{ text: 'a,b,c' }]);
    });

    it('reports garbage that looks like JSON as invalid JSON', () => {
      assertInputError(() => parseInput(node('auto'), '{not json'), /^input is not valid JSON: /);
    });
  });

  describe('limits and empty input', () => {
    for (const format of ['auto', 'json', 'csv', 'tsv', 'lines', 'files'] as const) {
      it(`rejects empty or blank input (${format})`, () => {
        for (const text of ['', '   \n\t  ']) {
          assertInputError(
            () => parseInput(node(format), text),
            'input is empty: give the data the run should process',
          );
        }
      });
    }

    it(`accepts exactly maxItemsPerRun (${maxItemsPerRun}) items`, () => {
      const text = Array.from({ length: maxItemsPerRun }, (_, i) => `line ${i}`).join('\n');
      assert.equal(parseInput(node('lines'), text).length, maxItemsPerRun);
    });

    it('rejects more than maxItemsPerRun items with the count and the limit', () => {
      const text = Array.from({ length: maxItemsPerRun + 1 }, (_, i) => `line ${i}`).join('\n');
      assertInputError(
        () => parseInput(node('lines'), text),
        `input holds ${maxItemsPerRun + 1} items; a run takes at most ${maxItemsPerRun} (split it into batches)`,
      );
    });

    it('the limit is 100,000', () => {
      assert.equal(maxItemsPerRun, 100_000);
    });
  });

  it('json format accepts a UTF-8 BOM', () => {
    assert.deepEqual(parseInput(node('json'), '\uFEFF[{"a":1}]'), [{ a: 1 }]);
  });

  // Issue 34: an example a person runs by hand takes a table they can type, not only JSON.
  it("reply-to-customers' input node reads a typed CSV table, and JSON still", () => {
    const example = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', 'examples', 'reply-to-customers.json'), 'utf8'),
    ) as { nodes: AgentNode[] };
    const input = example.nodes.find((n): n is InputNode => n.kind === 'input')!;
    assert.deepEqual(parseInput(input, 'email,message\nann@example.com,"Hello, is the blue in stock?"'), [
      { email: 'ann@example.com', message: 'Hello, is the blue in stock?' },
    ]);
    assert.deepEqual(parseInput(input, '[{"email": "bo@example.com", "message": "Hi"}]'), [
      { email: 'bo@example.com', message: 'Hi' },
    ]);
  });
});
