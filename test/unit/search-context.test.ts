// What search reads beside a passage's own text: its document's opening (so a question naming the document finds
// the passage that answers it), Arabic words without their article, and OCR pages in black and white.
import assert from 'node:assert/strict';
import { PGlite } from '@electric-sql/pglite';
import { loadImage } from '@napi-rs/canvas';
import { binarisedPicture, binariseGrey, greyscale, otsuThreshold } from '../../activities/sources/binarise';
import { documentOpening, holdsWholeDocument, textToEmbed } from '../../activities/sources/document-context';
import { recognize, stopOcr } from '../../activities/sources/ocr';
import { createSearchText } from '../../db/migrations/032_passage_context';
import { receiptPhoto } from '../fixtures/grounding/corpus';

describe('search context', () => {
  describe('a document’s opening (document-context.ts)', () => {
    const invoice = [
      'Contoso Office Supplies GmbH\nIndustriestrasse 21, 70565 Stuttgart',
      'INVOICE Invoice no. 2291 Invoice date: 3 March 2026',
      'Total due: 8,592.99',
    ];

    it('reaches past the letterhead to the header that names the document, with the title on its own line', () => {
      const opening = documentOpening(invoice);
      assert.match(opening, /^Contoso Office Supplies GmbH\n/);
      assert.match(opening, /Invoice no\. 2291/);
    });

    it('holds a short document whole, which then needs no context', () => {
      const plans = ['We plan to recruit nine developers in May.', 'The cafeteria reopens on Monday.'];
      assert.equal(holdsWholeDocument(documentOpening(plans), plans, false), true);
      assert.equal(holdsWholeDocument(documentOpening(plans), plans, true), false); // more passages follow
      assert.equal(holdsWholeDocument(documentOpening(invoice), invoice, false), true);
      const long = [...invoice, 'Item: A-100; Description: Standing desk, oak; Qty: 6; Amount: 2,934.00'.repeat(3)];
      assert.equal(holdsWholeDocument(documentOpening(long), long, false), false);
    });

    it('stops at a word near 200 characters when the document opens with prose', () => {
      const opening = documentOpening(['Handbook', 'word '.repeat(100)]);
      assert.ok(opening.length <= 200 && opening.length > 150, `${opening.length}`);
      assert.match(opening, /word$/);
    });

    it('embeds a passage under its document’s title only', () => {
      const context = documentOpening(['Fabrikam Cloud support plans', 'Plan: Silver; Support hours: 8 hours']);
      assert.equal(
        textToEmbed({ text: 'Plan: Gold; Response time: 4 hours', context }),
        'Fabrikam Cloud support plans\nPlan: Gold; Response time: 4 hours',
      );
      assert.equal(textToEmbed({ text: 'Alone', context: null }), 'Alone');
      assert.equal(textToEmbed({ text: 'Fabrikam Cloud support plans', context }), 'Fabrikam Cloud support plans');
    });
  });

  describe('Arabic in full-text search (search_text)', () => {
    let db: PGlite;
    before(async () => {
      db = await PGlite.create();
      await db.exec(createSearchText);
    });
    after(() => db.close());
    const matches = async (passage: string, question: string) =>
      (
        await db.query<{ m: boolean }>(
          `select to_tsvector('english', search_text($1)) @@ plainto_tsquery('english', search_text($2)) as m`,
          [passage, question],
        )
      ).rows[0].m;

    it('finds a word with or without its article, and with a preposition before it', async () => {
      assert.equal(await matches('سعر التذكرة خمسون درهما', 'كم سعر تذكرة الدخول'), false); // الدخول is not there
      assert.equal(await matches('سعر التذكرة خمسون درهما', 'سعر تذكرة'), true);
      assert.equal(await matches('يغلق لأعمال الصيانة', 'للصيانة'), true);
      assert.equal(await matches('والتذكرة صالحة', 'التذكرة'), true);
    });

    it('leaves other words and Latin text alone', async () => {
      assert.equal(
        (await db.query<{ t: string }>(`select search_text('الا لا ال alpha') as t`)).rows[0].t,
        'الا لا ال alpha',
      );
    });
  });

  describe('OCR in black and white (binarise.ts)', () => {
    after(() => stopOcr());

    it('splits a page’s grey levels between ink and paper', () => {
      const grey = new Uint8Array([...Array(90).fill(200), ...Array(10).fill(60)]);
      const t = otsuThreshold(grey);
      assert.ok(t >= 60 && t < 200, `${t}`);
      const rgba = new Uint8ClampedArray([190, 180, 170, 255, 70, 60, 50, 255, 200, 190, 180, 255]);
      assert.deepEqual([...binariseGrey(greyscale(rgba))], [255, 0, 255]);
    });

    it('reads the amounts at a photographed receipt’s edge, keeping the image’s size for boxes', async function () {
      this.timeout(120_000);
      const photo = (await receiptPhoto()).bytes; // the grounding corpus's: on a table, lit unevenly, with grain
      const [original, bw] = await Promise.all([loadImage(photo), binarisedPicture(photo)]);
      // A binary greymap: "P5", its width and height, the largest grey level, then one byte a pixel, black or white.
      const header = /^P5\n(\d+) (\d+)\n255\n/.exec(bw.subarray(0, 32).toString('ascii'));
      assert.ok(header, 'a PGM header');
      assert.deepEqual([Number(header[1]), Number(header[2])], [original.width, original.height]);
      const pixels = bw.subarray(header[0].length);
      assert.equal(pixels.length, original.width * original.height);
      assert.ok(
        pixels.every((v) => v === 0 || v === 255),
        'every pixel black or white',
      );
      const lines = (await recognize(photo)).lines.map((l) => l.text);
      for (const line of ['1 x Club sandwich 12.90', '3 x Sparkling water 17.70', 'incl. VAT 19% 13.80'])
        assert.ok(lines.includes(line), `${line} not in ${JSON.stringify(lines)}`);
    });
  });
});
