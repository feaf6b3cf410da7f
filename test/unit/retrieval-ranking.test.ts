// How retrieval ranks passages: the full-text candidates by how many of the question's words they hold (a word
// counted once, however often a passage repeats it; a word found only in the document's context, which every
// passage of the document carries, counted less), fused with the vector search so that the passages holding the
// most of them outweigh a short one the vectors favour.
import assert from 'node:assert/strict';
import { PGlite } from '@electric-sql/pglite';
import { fuse, lexicalSearch, type LexicalHit } from '../../activities/sources/retrieval';
import { createSearchText, passageTsv } from '../../db/migrations/032_passage_context';

/** Two documents as indexing leaves them: every passage with its document's opening as context. */
const invoiceOpening =
  'Contoso Office Supplies GmbH VAT ID DE 812 334 556\nINVOICE Invoice no. 2291 Invoice date: 3 March 2026 Due date: 2 April 2026';
const noticeOpening =
  'City museum of modern art\nThe museum opens its doors to visitors every day from nine in the morning until six in the evening.';
const passages: { text: string; context: string }[] = [
  { text: 'Contoso Office Supplies GmbH VAT ID DE 812 334 556', context: invoiceOpening },
  { text: 'INVOICE Invoice no. 2291 Invoice date: 3 March 2026 Due date: 2 April 2026', context: invoiceOpening },
  { text: 'VAT 19%: 1,371.99', context: invoiceOpening },
  { text: 'Total due (EUR): 8,592.99', context: invoiceOpening },
  { text: 'City museum of modern art', context: noticeOpening },
  {
    text: 'The museum opens its doors to visitors every day from nine in the morning until six in the evening.',
    context: noticeOpening,
  },
  { text: 'Guided tours in English start on Fridays at the same time, eleven in the morning.', context: noticeOpening },
];

describe('retrieval ranking', () => {
  describe('full-text candidates (lexicalSearch)', () => {
    let db: PGlite;
    before(async () => {
      db = await PGlite.create();
      await db.exec(createSearchText);
      await db.exec(`create table passages (id serial primary key, version_id text, text text, context text,
        tsv tsvector generated always as (${passageTsv}) stored)`);
      for (const p of passages)
        await db.query('insert into passages (version_id, text, context) values ($1, $2, $3)', [
          'v1',
          p.text,
          p.context,
        ]);
    });
    after(() => db.close());

    const search = async (query: string): Promise<(LexicalHit & { text: string })[]> => {
      let n = 0;
      const sql = lexicalSearch.replace(/\?/g, () => `$${++n}`);
      const hits = (await db.query<LexicalHit>(sql, [query, ['v1'], 50])).rows;
      return hits.map((h) => ({ ...h, text: passages[Number(h.id) - 1].text }));
    };

    it('puts the totals first for the total due on an invoice its header names, not the header', async () => {
      const [first, second] = await search('What is the total amount due on invoice 2291?');
      assert.equal(first.text, 'Total due (EUR): 8,592.99');
      assert.deepEqual([first.held, first.of], [4, 5]); // total, due, and invoice 2291 from its context
      // The header says "invoice" three times: one word. It holds three of the question's words as the totals
      // do (two of theirs weighed half), but all three are its document's; the totals' "total" is their own.
      assert.equal(second.text, passages[1].text);
      assert.equal(second.terms, first.terms);
    });

    it('counts a title’s words as its document’s name: the VAT line answers, not the letterhead', async () => {
      const texts = (await search('How much VAT is on the office furniture invoice?')).map((h) => h.text);
      // The letterhead holds "Office" and "VAT" (its VAT ID), the VAT line only "VAT" of its own.
      assert.ok(texts.indexOf('VAT 19%: 1,371.99') < texts.indexOf(passages[0].text), JSON.stringify(texts));
    });

    it('finds the passage whose own words answer above one that has them only from the opening', async () => {
      // Every passage of the notice carries its opening, the answer among it; the tours hold "time" and
      // "morning" of their own besides, and the rest of the question only from the opening.
      const [first] = await search('At what time does the museum open every morning?');
      assert.equal(first.text, passages[5].text);
    });
  });

  describe('fusion with the vector search (fuse)', () => {
    const hit = (id: string, terms: number, of = 5): LexicalHit => ({ id, terms, held: terms, of });

    it('ranks the passage holding the most of the question’s words above a heading the vectors favour', () => {
      // "the total due on invoice 2291": the totals hold four of its five words, the header three; the
      // embedding puts the header first and the totals third.
      const lexical = [hit('13', 4), hit('2', 3), hit('14', 3), hit('4', 2)];
      const nearest = ['2', '4', '13', '14'];
      assert.deepEqual(
        fuse(lexical, nearest)
          .slice(0, 2)
          .map(([id]) => id),
        ['13', '2'],
      );
    });

    it('lets the vectors decide when no passage holds two of the question’s words', () => {
      const lexical = [hit('7', 1), hit('8', 1)];
      assert.equal(fuse(lexical, ['8', '9', '7'])[0][0], '8');
    });

    it('counts every match as the strongest evidence when the question has a single word', () => {
      const lexical = [hit('7', 1, 1), hit('8', 1, 1)];
      assert.equal(fuse(lexical, ['8', '9', '7'])[0][0], '7');
    });
  });
});
