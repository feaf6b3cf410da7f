// `npm run bench:grounding`: how well retrieval finds and places answers in documents laid out as real ones are
// (issue 33). The corpus of test/fixtures/grounding/ (a two-column paper, a table invoice, .docx and HTML tables,
// a receipt photo, a rotated scan, Arabic PDFs, a workbook, Markdown) is built, uploaded through the API in one
// request (each file its own source, as a person uploads a folder) and indexed by the real worker code with the
// real embedding model; every question is asked through POST /v1/sources/search over all of them. Prints per case
// and overall: recall@5, top-1, box hit rate and mean IoU of the top hit, OCR character error rate, indexing time,
// each beside the issue's target, then every missed question; the last line is one JSON object. Figures are
// printed, never asserted. BENCH_GROUNDING_WRITE=<dir> also writes the corpus's files there.
import fs from 'node:fs';
import path from 'node:path';
import type { Box } from '../activities/sources/layout';
import { union } from '../activities/sources/layout';
import { stopOcr } from '../activities/sources/ocr';
import { mochaGlobalTeardown } from '../test/support/global';
import { createHarness, createTestWorkspace, startApi } from '../test/support/harness';
import { iou } from '../test/support/source-samples';
import { buildCorpus, type Target } from '../test/fixtures/grounding/corpus';
import { questions, type Question } from '../test/fixtures/grounding/questions';

const targets = { recall5: 0.95, top1: 0.8, boxHit: 0.95, cer: 0.03 };
/** Share of an answer's characters an OCR'd passage may misread and still count as saying it. */
const ocrTolerance = 0.1;
/**
 * The top hit's box hits when its highlight, or one line of it, overlaps the expected box by this IoU: a passage
 * read across two columns still touches the right paragraph, but highlights twice its width and misses.
 */
const boxHitIou = 0.5;

interface Hit {
  document: string;
  page: number | null;
  paragraph: number;
  text: string;
  boxes: Box[] | null;
}

/** NFKC (presentation forms and ligatures to letters), lower case, one kind of dash, single spaces. */
const normalise = (s: string) =>
  s
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/\s+/g, ' ')
    .trim();

function levenshtein(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** The fewest edits that turn `needle` into some substring of `hay` (Sellers' approximate matching). */
function substringDistance(needle: string, hay: string): number {
  let prev = new Array<number>(hay.length + 1).fill(0);
  for (let i = 1; i <= needle.length; i++) {
    const cur = [i];
    for (let j = 1; j <= hay.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (needle[i - 1] === hay[j - 1] ? 0 : 1));
    prev = cur;
  }
  return Math.min(...prev);
}

function says(text: string, answer: string[], ocr: boolean): boolean {
  const hay = normalise(text);
  return answer.every((a) => {
    const needle = normalise(a);
    if (hay.includes(needle)) return true;
    return ocr && substringDistance(needle, hay) <= Math.floor(ocrTolerance * needle.length);
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers of this API, read field by field
const json = (res: Response): Promise<any> => res.json();
const ratio = (n: number, d: number) => (d === 0 ? null : Number((n / d).toFixed(3)));
const fmt = (v: number | null) => (v === null ? '  –  ' : v.toFixed(3));
const short = (text: string, n = 110) => {
  const s = text.replace(/\s+/g, ' ');
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
};
const where = (h: { document: string; page: number | null; paragraph?: number }) =>
  `${h.document}${h.page !== null ? ` p.${h.page}` : ''}${h.paragraph !== undefined ? ` ¶${h.paragraph}` : ''}`;
const boxText = (b: Box) => `[${[b.x, b.y, b.width, b.height].map((n) => Math.round(n)).join(', ')}]`;

interface Outcome {
  q: Question;
  kind: string;
  expected: Target;
  hits: Hit[];
  rank: number | null; // 1-based rank of the first hit that answers, within the top 5
  boxed: boolean;
  boxHit: boolean;
  iou: number;
}

async function main() {
  const t0 = performance.now();
  const corpus = await buildCorpus();
  const buildSeconds = (performance.now() - t0) / 1000;
  const byName = new Map(corpus.map((d) => [d.name, d]));
  for (const q of questions) {
    if (!byName.has(q.document)) throw new Error(`"${q.question}" names no document of the corpus: ${q.document}`);
    if (q.target && !byName.get(q.document)!.targets[q.target])
      throw new Error(`"${q.question}": ${q.document} has no passage named ${q.target}`);
  }
  const dir = process.env.BENCH_GROUNDING_WRITE;
  if (dir) {
    fs.mkdirSync(dir, { recursive: true });
    for (const d of corpus) fs.writeFileSync(path.join(dir, d.name), d.bytes);
    fs.writeFileSync(
      path.join(dir, 'questions.json'),
      JSON.stringify(
        questions.map((q) => ({ ...q, expected: q.target ? byName.get(q.document)!.targets[q.target] : undefined })),
        null,
        2,
      ),
    );
    console.log(`corpus written to ${dir}`);
  }
  console.log(
    `corpus: ${corpus.length} documents (${corpus.map((d) => d.kind).join('; ')}), ${questions.length} questions; built in ${buildSeconds.toFixed(1)} s`,
  );

  const h = await createHarness();
  const api = await startApi(h);
  const { key, workspace } = await createTestWorkspace(h);
  const call = (p: string, init: RequestInit = {}) =>
    fetch(`${api.url}${p}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } });

  // Indexing: one upload of every file, timed until each source's version is no longer indexing.
  const form = new FormData();
  for (const d of corpus) form.append('files', new Blob([d.bytes]), d.name);
  const ti = performance.now();
  const uploaded = await json(await call('/v1/sources', { method: 'POST', body: form }));
  if (!Array.isArray(uploaded.data)) throw new Error(`upload refused: ${JSON.stringify(uploaded)}`);
  const pending = new Map<string, string>(uploaded.data.map((s: { id: string; name: string }) => [s.id, s.name]));
  const indexed = new Map<string, { seconds: number; status: string; passages: number; errors: string[] }>();
  while (pending.size > 0) {
    for (const [id, name] of pending) {
      const s = await json(await call(`/v1/sources/${id}`));
      const v = s.latest_version;
      if (v.status === 'indexing' && (performance.now() - ti) / 1000 < 600) continue;
      pending.delete(id);
      const errors = [v.error, ...v.documents.map((d: { error: string | null }) => d.error)].filter(Boolean);
      indexed.set(name, { seconds: (performance.now() - ti) / 1000, status: v.status, passages: v.passages, errors });
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const indexSeconds = Math.max(...[...indexed.values()].map((i) => i.seconds));
  console.log(`\nindexing: all ${corpus.length} documents done in ${indexSeconds.toFixed(1)} s (uploaded together)`);
  for (const d of corpus) {
    const i = indexed.get(d.name)!;
    console.log(
      `  ${d.name.padEnd(24)} ${i.status.padEnd(8)} ${String(i.passages ?? 0).padStart(3)} passages  ${i.seconds.toFixed(1).padStart(5)} s${i.errors.length ? `  error: ${short(i.errors.join('; '), 160)}` : ''}`,
    );
  }

  // Retrieval: every question over every source, the top 5 as a retrieve step would take them.
  const names = corpus.map((d) => d.name).filter((n) => indexed.get(n)?.status === 'ready');
  const outcomes: Outcome[] = [];
  for (const q of questions) {
    const doc = byName.get(q.document)!;
    const expected: Target = q.target ? doc.targets[q.target] : { page: q.page ?? null };
    const res = await call('/v1/sources/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: q.question, sources: names, top_k: 5 }),
    });
    const body = await json(res);
    if (!res.ok) throw new Error(`search answered ${res.status}: ${JSON.stringify(body)}`);
    const hits: Hit[] = body.data;
    const answers = (hit: Hit) =>
      hit.document === q.document &&
      (expected.page === null || hit.page === expected.page) &&
      says(hit.text, expected.text ? [...q.answer, expected.text] : q.answer, !!doc.ocrTruth);
    const index = hits.findIndex(answers);
    const top = hits[0];
    const boxed = !!expected.box;
    let boxHit = false;
    let overlap = 0;
    if (boxed && top && top.document === q.document && top.page === expected.page && top.boxes?.length) {
      // The highlight as a whole, or one of its lines (a receipt's block highlights the line asked about).
      overlap = Math.max(iou(union(top.boxes), expected.box!), ...top.boxes.map((b) => iou(b, expected.box!)));
      boxHit = overlap >= boxHitIou;
    }
    outcomes.push({
      q,
      kind: doc.kind,
      expected,
      hits,
      rank: index < 0 ? null : index + 1,
      boxed,
      boxHit,
      iou: overlap,
    });
  }

  // OCR: the indexed text of each OCR'd document against the text drawn, in reading order.
  const ocr: { name: string; cer: number | null; chars: number; unread: string[] }[] = [];
  for (const d of corpus.filter((c) => c.ocrTruth)) {
    const rows: { text: string }[] = await h.stack
      .knex('passages as p')
      .join('sources as s', 's.current_version_id', 'p.version_id')
      .where({ 's.workspace_id': workspace.id, 's.name': d.name })
      .orderBy(['p.page', 'p.paragraph', 'p.part'])
      .select('p.text');
    const truth = d.ocrTruth!.join(' ').replace(/\s+/g, ' ').trim();
    const read = rows
      .map((r) => r.text)
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    ocr.push({
      name: d.name,
      cer: rows.length ? levenshtein(read, truth) / truth.length : null,
      chars: truth.length,
      unread: d.ocrTruth!.filter((line) => !read.includes(line)), // lines misread, or read out of order
    });
  }

  await api.close();
  await h.close();
  await stopOcr();
  await mochaGlobalTeardown();

  const summarise = (os: Outcome[]) => {
    const boxed = os.filter((o) => o.boxed);
    return {
      questions: os.length,
      recall5: ratio(os.filter((o) => o.rank !== null).length, os.length),
      top1: ratio(os.filter((o) => o.rank === 1).length, os.length),
      boxed: boxed.length,
      boxHit: ratio(boxed.filter((o) => o.boxHit).length, boxed.length),
      meanIou: boxed.length ? Number((boxed.reduce((s, o) => s + o.iou, 0) / boxed.length).toFixed(3)) : null,
    };
  };
  console.log(`\n${'case'.padEnd(30)} ${'questions'.padStart(9)}  recall@5  top-1   box hit  mean IoU`);
  const kinds = [...new Set(corpus.map((d) => d.kind))];
  for (const kind of kinds) {
    const s = summarise(outcomes.filter((o) => o.kind === kind));
    console.log(
      `${kind.padEnd(30)} ${String(s.questions).padStart(9)}  ${fmt(s.recall5)}     ${fmt(s.top1)}   ${fmt(s.boxHit)}    ${fmt(s.meanIou)}`,
    );
  }
  const all = summarise(outcomes);
  const ocrChars = ocr.reduce((n, o) => n + o.chars, 0);
  const cer = ocr.every((o) => o.cer !== null)
    ? Number((ocr.reduce((n, o) => n + o.cer! * o.chars, 0) / ocrChars).toFixed(4))
    : null;
  const mark = (ok: boolean) => (ok ? 'meets' : 'MISSES');
  console.log(`\noverall (${all.questions} questions, ${all.boxed} with a box):`);
  console.log(
    `  recall@5   ${fmt(all.recall5)}  target ≥ ${targets.recall5}  ${mark((all.recall5 ?? 0) >= targets.recall5)}`,
  );
  console.log(`  top-1      ${fmt(all.top1)}  target ≥ ${targets.top1}  ${mark((all.top1 ?? 0) >= targets.top1)}`);
  console.log(
    `  box hit    ${fmt(all.boxHit)}  target ≥ ${targets.boxHit}  ${mark((all.boxHit ?? 0) >= targets.boxHit)}  (IoU ≥ ${boxHitIou} of the top hit's box, or one of its lines, with the expected box)`,
  );
  console.log(`  mean IoU   ${fmt(all.meanIou)}  (the same IoU; 0 when the top hit is on another page or document)`);
  for (const o of ocr)
    console.log(`  OCR CER    ${o.cer === null ? '  –  ' : o.cer.toFixed(4)}  ${o.name} (${o.chars} characters drawn)`);
  console.log(
    `  OCR CER    ${cer === null ? '  –  ' : cer.toFixed(4)}  target ≤ ${targets.cer}  ${mark(cer !== null && cer <= targets.cer)}  (all OCR documents)`,
  );
  console.log(`  indexing   ${indexSeconds.toFixed(1)} s for ${corpus.length} documents uploaded together`);

  const missed = outcomes.filter((o) => o.rank !== 1 || (o.boxed && !o.boxHit));
  console.log(`\nmisses (${missed.length}): not first, not in the top 5, or the top hit's box elsewhere`);
  for (const o of missed) {
    const top = o.hits[0];
    const what = [
      o.rank === null ? 'not in top 5' : o.rank > 1 ? `rank ${o.rank}` : 'first',
      o.boxed ? `box IoU ${o.iou.toFixed(2)}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    console.log(`- [${o.kind}] ${o.q.question}  (${what})`);
    console.log(
      `    expected: ${where({ document: o.q.document, page: o.expected.page })}${o.expected.box ? ` box ${boxText(o.expected.box)}` : ''} saying ${o.q.answer.map((a) => `"${a}"`).join(' + ')}${o.expected.text ? ' in its whole drawn text' : ''}`,
    );
    console.log(
      top
        ? `    first:    ${where(top)}${top.boxes?.length ? ` box ${boxText(union(top.boxes))}` : ''} "${short(top.text)}"`
        : '    first:    nothing',
    );
  }

  for (const o of ocr.filter((x) => x.unread.length > 0))
    console.log(
      `\nOCR lines of ${o.name} not found verbatim in its passages: ${o.unread.map((l) => `"${l}"`).join(', ')}`,
    );

  console.log(
    JSON.stringify({
      documents: corpus.length,
      questions: all.questions,
      recall_at_5: all.recall5,
      top1: all.top1,
      box_questions: all.boxed,
      box_hit: all.boxHit,
      mean_iou: all.meanIou,
      ocr_cer: cer,
      ...Object.fromEntries(ocr.map((o) => [`ocr_cer_${o.name}`, o.cer === null ? null : Number(o.cer.toFixed(4))])),
      index_s: Number(indexSeconds.toFixed(2)),
      per_case: Object.fromEntries(kinds.map((k) => [k, summarise(outcomes.filter((o) => o.kind === k))])),
    }),
  );
}

main().catch(async (err) => {
  console.error(err);
  await stopOcr();
  await mochaGlobalTeardown();
  process.exit(1);
});
