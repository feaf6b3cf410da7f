// The grounding benchmark's corpus (test/fixtures/grounding/) is a measurement others are judged by: it must be
// the same at every build, ask about passages that exist, and put each expected box where the text really is,
// in the citations' coordinates (points from the top-left of the page as displayed).
import assert from 'node:assert/strict';
import { openPdf } from '../../activities/sources/extract-pdf';
import { buildCorpus, type CorpusDocument } from '../fixtures/grounding/corpus';
import { questions } from '../fixtures/grounding/questions';

describe('grounding corpus', () => {
  let corpus: CorpusDocument[];
  before(async () => {
    corpus = await buildCorpus();
  });

  it('asks at least 40 questions, each about a passage the corpus has, and at least 3 of every document', () => {
    assert.ok(questions.length >= 40, `${questions.length} questions`);
    const copied: string[] = [];
    for (const q of questions) {
      const doc = corpus.find((d) => d.name === q.document);
      assert.ok(doc, `${q.question}: no document ${q.document}`);
      if (q.target) assert.ok(doc.targets[q.target], `${q.question}: ${q.document} has no passage ${q.target}`);
      // A question is not its passage copied: it shares no run of four words with what answers it.
      const runs = (t: string) => {
        const w = t.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
        return new Set(w.slice(3).map((_, i) => w.slice(i, i + 4).join(' ')));
      };
      const asked = runs(q.question);
      for (const a of [...q.answer, (q.target && doc.targets[q.target].text) || ''])
        for (const run of runs(a)) if (asked.has(run)) copied.push(`${q.question} copies "${run}"`);
    }
    assert.deepEqual(copied, []);
    for (const d of corpus)
      assert.ok(questions.filter((q) => q.document === d.name).length >= 3, `${d.name} has fewer than 3 questions`);
  });

  it('is the same, byte for byte, each time it is built', async () => {
    const again = await buildCorpus();
    for (const [i, d] of corpus.entries()) {
      assert.ok(d.bytes.equals(again[i].bytes), `${d.name} differs between builds`);
      assert.deepEqual(d.targets, again[i].targets);
    }
  });

  it('draws each passage of the text PDFs inside its expected box, as pdf.js reads the page', async () => {
    for (const name of ['travel-study.pdf', 'invoice-2291.pdf']) {
      const doc = corpus.find((d) => d.name === name)!;
      const pdf = await openPdf(doc.bytes);
      const lib = await import('pdfjs-dist/legacy/build/pdf.mjs');
      for (const [key, target] of Object.entries(doc.targets)) {
        const page = await pdf.getPage(target.page!);
        const viewport = page.getViewport({ scale: 1 });
        const inside: string[] = [];
        for (const item of (await page.getTextContent()).items) {
          if (!('str' in item) || item.str.trim() === '') continue;
          const [, , , , x, baseline] = lib.Util.transform(viewport.transform, item.transform);
          const b = target.box!;
          if (x >= b.x - 0.5 && x <= b.x + b.width && baseline >= b.y && baseline <= b.y + b.height)
            inside.push(item.str);
        }
        assert.ok(inside.length > 0, `${name} ${key}: no text inside ${JSON.stringify(target.box)}`);
        if (target.text)
          assert.equal(inside.join(' '), target.text, `${name} ${key}: the box holds other text than its own`);
      }
      await pdf.destroy();
    }
  });
});
