// Structure that extraction keeps: a table's rows with their header (Word and web pages, as spreadsheets do), and
// the short lines of a receipt or a form as one block, while prose keeps its paragraph breaks.
import assert from 'node:assert/strict';
import { paragraphsFromLines, toPassages, type Line } from '../../activities/sources/layout';
import { extractHtml } from '../../activities/sources/extract-text';
import { extractDocx, extractWorkbook } from '../../activities/sources/extract-office';
import { docx, workbook } from '../support/source-samples';

const enc = (s: string) => new TextEncoder().encode(s);
const texts = (ps: { text: string }[]) => ps.map((p) => p.text);

/** Lines as a recogniser boxes them: `pitch` apart, their ink `height` high, as wide as their text. */
const lines = (texts: string[], { top = 100, pitch = 48, height = 22, x = 44 } = {}): Line[] =>
  texts.map((text, i) => ({ text, box: { x, y: top + i * pitch, width: text.length * 18, height } }));

const plans = [
  ['Plan', 'Support hours', 'Price per seat'],
  ['Bronze', '4 hours', 'EUR 9'],
  ['Silver', '8 hours', 'EUR 19'],
  ['Gold', '24 hours', 'EUR 39'],
];

describe('source structure', () => {
  it('reads a Word table row by row, each value under its heading, numbered among the paragraphs', async () => {
    const { paragraphs } = await extractDocx(await docx(['Support plans', plans, 'Prices exclude VAT.']));
    assert.deepEqual(
      paragraphs.map((p) => [p.page, p.paragraph, p.text]),
      [
        [null, 1, 'Support plans'],
        [null, 2, 'Plan: Bronze; Support hours: 4 hours; Price per seat: EUR 9'],
        [null, 3, 'Plan: Silver; Support hours: 8 hours; Price per seat: EUR 19'],
        [null, 4, 'Plan: Gold; Support hours: 24 hours; Price per seat: EUR 39'],
        [null, 5, 'Prices exclude VAT.'],
      ],
    );
  });

  it('reads an HTML table the same way, and a long one as groups of rows under the header', () => {
    const row = (cells: string[], tag = 'td') => `<tr>${cells.map((c) => `<${tag}>${c}</${tag}>`).join('')}</tr>`;
    const parts = Array.from({ length: 45 }, (_, i) => [`P-${100 + i}`, `Part number ${i}`, `${i + 1}.50`]);
    const html = `<html><head><title>Support FAQ</title></head><body><main><article>
      <h1>Support FAQ</h1>
      <p>How many hours of support each plan includes every month, and what a seat costs on each of the plans we sell.</p>
      <table><thead>${row(plans[0], 'th')}</thead><tbody>${plans
        .slice(1)
        .map((r) => row(r))
        .join('')}</tbody></table>
      <p>The spare parts we keep in stock, with their prices in euros:</p>
      <table>${row(['Part', 'Name', 'Price'], 'th')}${parts.map((r) => row(r)).join('')}</table>
      </article></main></body></html>`;
    const { paragraphs } = extractHtml(enc(html));
    const found = texts(paragraphs);
    const first = found.findIndex((t) => t.startsWith('Plan: Bronze'));
    assert.deepEqual(found.slice(first, first + 3), [
      'Plan: Bronze; Support hours: 4 hours; Price per seat: EUR 9',
      'Plan: Silver; Support hours: 8 hours; Price per seat: EUR 19',
      'Plan: Gold; Support hours: 24 hours; Price per seat: EUR 39',
    ]);
    assert.ok(!found.includes('8 hours') && !found.includes('Silver'), 'no cell stands alone');
    const groups = paragraphs.filter((p) => p.text.startsWith('| Part |'));
    assert.equal(groups.length, 5, 'forty-five rows in five groups');
    for (const g of groups) {
      const [head, ...rows] = g.text.split('\n');
      assert.equal(head, '| Part | Name | Price |');
      assert.ok(rows.length === 9 && rows.every((r) => /^\| P-\d+ \| Part number \d+ \| [\d.]+ \|$/.test(r)));
    }
    assert.ok(groups[1].text.includes('| P-110 | Part number 10 | 11.50 |'));
    // every group is one passage, located by its paragraph number
    const passages = toPassages(groups);
    assert.deepEqual(
      passages.map((p) => [p.paragraph, p.part]),
      groups.map((g) => [g.paragraph, 1]),
    );
  });

  it('lines values up under their headings when cells span rows or columns', () => {
    const html = `<html><body><table>
      <tr><th>Zone</th><th>Country</th><th>Delivery days</th></tr>
      <tr><td rowspan="2">Zone 1</td><td>Germany</td><td>1–2</td></tr>
      <tr><td>Austria</td><td>2–3</td></tr>
      <tr><td>Zone 2</td><td colspan="2">on request</td></tr>
      </table></body></html>`;
    assert.deepEqual(texts(extractHtml(enc(html)).paragraphs), [
      'Zone: Zone 1; Country: Germany; Delivery days: 1–2',
      'Zone: Zone 1; Country: Austria; Delivery days: 2–3',
      'Zone: Zone 2; Country: on request',
    ]);
  });

  it('reads each paragraph and table row under the heading of its section', () => {
    const html = `<html><head><title>Shipping FAQ</title></head><body><article>
      <h2>Where do you ship, and how long does it take?</h2>
      <p>We ship to most countries in Europe; delivery times depend on the zone of the address.</p>
      <table><tr><th>Zone</th><th>Delivery time</th></tr><tr><td>Zone 2</td><td>2–4 working days</td></tr>
      <tr><td>Zone 3</td><td>3–6 working days</td></tr></table>
      <h2>Returns</h2><h2>Who pays for return shipping?</h2>
      <p>Returns are free within Germany; from elsewhere the return label costs EUR 6.50.</p>
      </article></body></html>`;
    const where = 'Where do you ship, and how long does it take?';
    assert.deepEqual(texts(extractHtml(enc(html)).paragraphs).slice(-5), [
      `${where}\nWe ship to most countries in Europe; delivery times depend on the zone of the address.`,
      `${where}\nZone: Zone 2; Delivery time: 2–4 working days`,
      `${where}\nZone: Zone 3; Delivery time: 3–6 working days`,
      'Returns',
      'Who pays for return shipping?\nReturns are free within Germany; from elsewhere the return label costs EUR 6.50.',
    ]);
  });

  it('reads a sheet row by row under the sheet name, without the header row standing alone', async () => {
    const book = workbook(
      {
        'Budget 2026': [
          ['Department', 'Q3', 'Budget owner'],
          ['Marketing', 95000, 'Lena Park'],
        ],
        Sheet2: [
          ['Region', 'Manager'],
          ['North', 'Ada'],
        ],
        Notes: [['Figures in euros']],
      },
      'xlsx',
    );
    const { paragraphs } = await extractWorkbook(book, 'xlsx');
    assert.deepEqual(
      paragraphs.map((p) => [p.page, p.paragraph, p.text]),
      [
        [1, 2, 'Budget 2026\nDepartment: Marketing; Q3: 95000; Budget owner: Lena Park'],
        [2, 2, 'Region: North; Manager: Ada'],
        [3, 1, 'Notes: Figures in euros'],
      ],
    );
  });

  it('reads a table used for layout as the paragraphs in its cells', () => {
    const html = `<html><body><table><tr><td><p>Our offices open at eight every weekday morning.</p><p>They close at six.</p></td></tr></table></body></html>`;
    assert.deepEqual(texts(extractHtml(enc(html)).paragraphs), [
      'Our offices open at eight every weekday morning.',
      'They close at six.',
    ]);
  });

  it('reads the short lines of a receipt as one block, each with its box, apart from a block further off', () => {
    const receipt = lines([
      'CAFE LINDENHOF',
      'Lindenstrasse 12, 10969 Berlin',
      '2 x Cappuccino 7.60',
      '1 x Club sandwich 12.90',
      'TOTAL EUR 86.40',
      'incl. VAT 19% 13.80',
      'Customer copy',
    ]);
    for (const l of receipt.slice(2)) l.box.y += 48; // a blank line sets the header off from the items
    receipt[5].box.y -= 20; // printed close under the total, yet not running text: it starts in lower case
    receipt[6].box.y += 200; // and the next block on the page is well apart
    const paragraphs = paragraphsFromLines(receipt, 1);
    assert.deepEqual(texts(paragraphs), [
      'CAFE LINDENHOF Lindenstrasse 12, 10969 Berlin 2 x Cappuccino 7.60 1 x Club sandwich 12.90 TOTAL EUR 86.40 incl. VAT 19% 13.80',
      'Customer copy',
    ]);
    const [passage] = toPassages(paragraphs);
    assert.deepEqual(
      passage.boxes,
      receipt.slice(0, 6).map((l) => l.box),
      'the citation highlights each line',
    );
  });

  it('keeps the paragraph breaks of prose, and a short line after it apart', () => {
    const prose = lines(
      [
        'The lease of the apartment at Elbchaussee 41 ends on',
        'the last day of March, as both parties agreed.',
        'The keys are to be handed back at our office by noon.',
        'Yours sincerely,',
      ],
      { pitch: 30 },
    );
    prose[2].box.y += 20; // paragraph spacing, no wider than a receipt's line spacing
    prose[3].box.y += 40;
    assert.deepEqual(texts(paragraphsFromLines(prose, 1)), [
      'The lease of the apartment at Elbchaussee 41 ends on the last day of March, as both parties agreed.',
      'The keys are to be handed back at our office by noon.',
      'Yours sincerely,',
    ]);
    // Short lines too, when they are sentences: prose with a paragraph break, no wider than a receipt's blank line
    const short = lines(['Acme was founded in 1952 in Springfield.', 'It makes anvils and rocket skates.'], {
      pitch: 30,
    });
    short.push(...lines(['The board meets every quarter.'], { top: 100 + 30 + 60 }));
    assert.deepEqual(texts(paragraphsFromLines(short, 1)), [
      'Acme was founded in 1952 in Springfield. It makes anvils and rocket skates.',
      'The board meets every quarter.',
    ]);
  });
});
