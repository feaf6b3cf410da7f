// Extraction without servers: what a file really is, paragraphs from positioned lines, passages that keep their
// boxes, and the text formats' paragraph numbers.
import assert from 'node:assert/strict';
import { checkSignature, formatFromName, sniff, UnreadableDocumentError } from '../../services/sources/formats';
import { paragraphsFromLines, toPassages, type Line } from '../../activities/sources/layout';
import { extractCsv, extractMarkdown, extractPlainText } from '../../activities/sources/extract-text';
import { extractPdfPages } from '../../activities/sources/extract-pdf';
import { ocrPoolSize } from '../../activities/sources/ocr';
import { checkZip } from '../../activities/sources/extract-office';
import { docx, iou, textPdf, zipBomb } from '../support/source-samples';

const enc = (s: string) => new TextEncoder().encode(s);
const line = (text: string, y: number, x = 72, height = 12): Line => ({
  text,
  box: { x, y, width: 300, height },
});

describe('source extraction', () => {
  it('names formats by extension, case-insensitively, and knows none it cannot read', () => {
    assert.equal(formatFromName('Scan.JPG'), 'jpeg');
    assert.equal(formatFromName('report.final.pdf'), 'pdf');
    assert.equal(formatFromName('page.htm'), 'html');
    assert.equal(formatFromName('setup.exe'), undefined);
    assert.equal(formatFromName('README'), undefined);
  });

  it('tells what bytes are from their signature, and refuses a file whose name lies', () => {
    assert.equal(sniff(enc('%PDF-1.7\n')), 'pdf');
    assert.equal(sniff(Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'png');
    assert.equal(sniff(enc('héllo wörld')), 'text');
    assert.equal(sniff(Uint8Array.from([0, 1, 2, 3])), 'binary');
    assert.doesNotThrow(() => checkSignature('a.csv', 'csv', enc('a,b\n1,2')));
    assert.throws(
      () => checkSignature('photo.png', 'png', enc('%PDF-1.4')),
      (err: Error) =>
        err instanceof UnreadableDocumentError &&
        /photo\.png is named like a PNG image but its content is a PDF/.test(err.message),
    );
  });

  it('groups lines into paragraphs at gaps and column changes, mending hyphenated words', () => {
    const paragraphs = paragraphsFromLines(
      [
        line('The first para-', 100),
        line('graph goes on here.', 114),
        line('A second paragraph after a gap.', 150),
        line('A column to the right.', 164, 500),
      ],
      3,
    );
    assert.deepEqual(
      paragraphs.map((p) => [p.page, p.paragraph, p.text]),
      [
        [3, 1, 'The first paragraph goes on here.'],
        [3, 2, 'A second paragraph after a gap.'],
        [3, 3, 'A column to the right.'],
      ],
    );
  });

  it('cuts long paragraphs into passages at line boundaries, each with the boxes of its lines', () => {
    const lines = Array.from({ length: 40 }, (_, i) => line(`${'word '.repeat(12)}line ${i}`, 100 + i * 14));
    const passages = toPassages(paragraphsFromLines(lines, 1));
    assert.ok(passages.length > 1);
    assert.deepEqual(
      passages.map((p) => p.part),
      passages.map((_, i) => i + 1),
    );
    assert.ok(passages.every((p) => p.paragraph === 1 && p.text.length <= 1300));
    assert.equal(passages.flatMap((p) => p.boxes!).length, 40);
    const plain = toPassages([{ page: null, paragraph: 1, text: 'A sentence. '.repeat(300) }]);
    assert.ok(plain.length >= 3 && plain.every((p) => p.text.length <= 1200 && p.boxes === null));
  });

  it('numbers paragraphs of text, Markdown and CSV as a reader would', () => {
    assert.deepEqual(
      extractPlainText(enc('\uFEFFone\n\n\n two  \nlines\n\nthree')).paragraphs.map((p) => p.text),
      ['one', 'two lines', 'three'],
    );
    assert.deepEqual(
      extractMarkdown(enc('# Title\nintro text\n\n```\ncode\n\nblock\n```\n## Next')).paragraphs.map((p) => p.text),
      ['Title\nintro text', 'Title\n``` code block ```', 'Next'],
    );
    assert.deepEqual(
      extractCsv(enc('name,city\nAda,London\n,\nBob,Paris')).paragraphs.map((p) => [p.paragraph, p.text]),
      [
        [2, 'name: Ada; city: London'],
        [4, 'name: Bob; city: Paris'],
      ],
    );
  });

  it('reads a PDF text layer with boxes that match where the text was drawn', async () => {
    const pdf = await textPdf([[['Hello from the first line', 'and the second line.'], ['Another paragraph.']]]);
    const { pages, paragraphs } = await extractPdfPages(pdf.bytes, 1, 1);
    assert.deepEqual(
      pages.map((p) => [p.page, p.width, p.height, p.unit]),
      [[1, 612, 792, 'pt']],
    );
    assert.deepEqual(
      paragraphs.map((p) => p.text),
      ['Hello from the first line and the second line.', 'Another paragraph.'],
    );
    const lines = paragraphs[0].lines!.map((l) => l.box);
    const x0 = Math.min(...lines.map((b) => b.x));
    const y0 = Math.min(...lines.map((b) => b.y));
    const box = {
      x: x0,
      y: y0,
      width: Math.max(...lines.map((b) => b.x + b.width)) - x0,
      height: Math.max(...lines.map((b) => b.y + b.height)) - y0,
    };
    assert.ok(iou(box, pdf.boxes[0][0]) > 0.8);
  });

  it('lets an ordinary Office file through the zip check and stops a zip bomb', async () => {
    await checkZip(await docx(['fine']));
    await assert.rejects(checkZip(await zipBomb(310)), /more than 300 MB when unpacked/);
  });

  it('sizes the OCR pool to the machine unless configured', () => {
    assert.equal(ocrPoolSize({ CADRE_OCR_WORKERS: '3' }), 3);
    const auto = ocrPoolSize({});
    assert.ok(auto >= 1 && auto <= 4);
  });
});
