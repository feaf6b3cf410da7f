// Reading PDFs laid out as real documents are: columns, tables, right-to-left text, and documents read at once.
import assert from 'node:assert/strict';
import { extractPdfPages, pdfPageCount } from '../../activities/sources/extract-pdf';
import { toPassages, union } from '../../activities/sources/layout';
import { iou, textPdf } from '../support/source-samples';
import { arabicPdf, singleColumnPdf, tablePdf, twoColumnPdf } from '../support/pdf-layouts';

describe('PDF layout', () => {
  it('reads a two-column page column by column, with a box per line', async () => {
    const left = [
      'The daily meal allowance for trips to Vienna is EUR 45 for each full day of travel, and half of that for the days of arrival and departure.',
      'Hotel nights are reimbursed up to EUR 120 in capital cities and up to EUR 95 elsewhere, breakfast included.',
    ];
    const right = [
      'Airport parking is reimbursed up to EUR 25 per day when it is cheaper than a taxi to the airport and back.',
      'Rental cars need the approval of a manager before the trip, and the smallest suitable car is booked.',
    ];
    const pdf = await twoColumnPdf('Travel policy', left, right);
    const { paragraphs } = await extractPdfPages(pdf.bytes, 1, 1);
    assert.deepEqual(
      paragraphs.map((p) => p.text),
      ['Travel policy', ...left, ...right],
    );
    paragraphs.slice(1).forEach((p, i) => {
      const expected = pdf.lines[i];
      assert.equal(p.lines?.length, expected.length, p.text);
      p.lines!.forEach((l, k) => assert.ok(iou(l.box, expected[k]) > 0.7, JSON.stringify([l.box, expected[k]])));
    });
  });

  it('keeps a single column whole: an indented line and figures at the right margin stay in their lines', async () => {
    const pdf = await singleColumnPdf([
      { text: 'Our support team answers every request within one working day, and most' },
      { text: 'requests within four hours of being received by the team on duty.' },
      { text: 'Weekends and public holidays are excluded.', indent: 36 },
      { text: 'Phone support is open from eight to six on working days, and chat support', gapBefore: true },
      { text: 'from nine to five on the same days, with answers in English and German.' },
      { text: 'Support plans cost per month', figure: '49.00', gapBefore: true },
      { text: 'Extra seats cost per month', figure: '9.00' },
    ]);
    const text = (await extractPdfPages(pdf, 1, 1)).paragraphs.map((p) => p.text).join(' | ');
    assert.match(
      text,
      /^Our support team answers every request within one working day, and most requests within four hours of being received by the team on duty\. Weekends and public holidays are excluded\. \| Phone support is open .* German\. \| /,
    );
    assert.match(text, /Support plans cost per month\W+49\.00\W+Extra seats cost per month\W+9\.00$/);
  });

  it('reads a letterhead block by block: the sender beside the invoice number', async () => {
    const pdf = await singleColumnPdf([
      { text: 'Contoso Office Supplies GmbH', figure: 'INVOICE' },
      { text: 'Industriestrasse 21, 70565 Stuttgart', figure: 'Invoice no. 2291' },
      { text: 'VAT ID DE 812 334 556', figure: 'Invoice date: 3 March 2026' },
    ]);
    assert.deepEqual(
      (await extractPdfPages(pdf, 1, 1)).paragraphs.map((p) => p.text),
      [
        'Contoso Office Supplies GmbH Industriestrasse 21, 70565 Stuttgart VAT ID DE 812 334 556',
        'INVOICE Invoice no. 2291 Invoice date: 3 March 2026',
      ],
    );
  });

  it('reads a table row by row, each row with its header and its own box', async () => {
    const rows = [
      ['Plan', 'Support hours', 'Response time', 'Price'],
      ['Bronze', '4 hours', '2 days', 'EUR 19'],
      ['Silver', '8 hours', '1 day', 'EUR 49'],
      ['Gold', '24 hours', '4 hours', 'EUR 99'],
    ];
    const pdf = await tablePdf('Support plans', [72, 200, 330, 450], rows);
    const { paragraphs } = await extractPdfPages(pdf.bytes, 1, 1);
    assert.deepEqual(
      paragraphs.map((p) => p.text),
      [
        'Support plans',
        'Plan: Bronze; Support hours: 4 hours; Response time: 2 days; Price: EUR 19',
        'Plan: Silver; Support hours: 8 hours; Response time: 1 day; Price: EUR 49',
        'Plan: Gold; Support hours: 24 hours; Response time: 4 hours; Price: EUR 99',
        'Prices include VAT and are billed monthly.',
      ],
    );
    const [silver] = paragraphs[2].lines!;
    assert.ok(iou(silver.box, pdf.rows[2]) > 0.7, JSON.stringify([silver.box, pdf.rows[2]]));
  });

  it('reads a long table in groups of rows under its header, each row with its box', async () => {
    const rows = [
      ['Item', 'Warehouse', 'Stock'],
      ...Array.from({ length: 40 }, (_, i) => [`Widget model ${i + 1}`, `Hall ${(i % 4) + 1}`, `${i * 7} units`]),
    ];
    const pdf = await tablePdf('Stock list', [72, 260, 400], rows);
    const passages = toPassages((await extractPdfPages(pdf.bytes, 1, 1)).paragraphs).filter((p) =>
      p.text.startsWith('| Item | Warehouse | Stock |'),
    );
    assert.equal(passages.length, 4);
    for (const p of passages) assert.equal(p.boxes?.length, 11, p.text); // the header and ten rows
    const third = passages[2];
    assert.match(third.text, /^\| Item \| Warehouse \| Stock \| \| Widget model 21 \| Hall 1 \| 140 units \| /);
    assert.match(third.text, /\| Widget model 23 \| Hall 3 \| 154 units \|/);
    assert.ok(iou(third.boxes![3], pdf.rows[23]) > 0.7, JSON.stringify([third.boxes![3], pdf.rows[23]]));
  });

  for (const placement of ['words', 'lines'] as const) {
    it(`reads Arabic placed ${placement === 'words' ? 'word by word' : 'line by line'} in logical order, ligatures whole`, async () => {
      const lines = ['زرنا المسجد الأقصى في الليلة الماضية', 'وصل القطار عام 2024 إلى المحطة'];
      const { paragraphs } = await extractPdfPages(await arabicPdf(lines, placement), 1, 1);
      const text = paragraphs.map((p) => p.text).join(' ');
      assert.equal(text, lines.join(' ').normalize('NFKC'));
      assert.ok(
        paragraphs.flatMap((p) => p.lines ?? []).every((l) => l.box.x > 300 && l.box.x + l.box.width <= 541),
        'the boxes stay at the right margin',
      );
      assert.ok(union(paragraphs[0].lines!.map((l) => l.box)).width > 100);
    });
  }

  it('reads a long document while others open and close: no "Invalid page request"', async () => {
    const long = await textPdf(Array.from({ length: 12 }, (_, i) => [[`Page ${i + 1} of the long document.`]]));
    const short = await textPdf([[['A one-page document.']]]);
    const reading = extractPdfPages(long.bytes, 1, 12);
    for (let i = 0; i < 20; i++) {
      await pdfPageCount(short.bytes);
      await new Promise((r) => setTimeout(r, 1));
    }
    const { pages, paragraphs } = await reading;
    assert.equal(pages.length, 12);
    assert.equal(paragraphs[11].text, 'Page 12 of the long document.');
  });
});
