// `npm run bench:sources`: indexing and retrieval of sources on the real servers, through the API. Prints
// figures (never asserted); the last line is one JSON object.
//   BENCH_TEXT_PAGES (default 50): pages of the text PDF; BENCH_SCAN_PAGES (5): pages of the scanned PDF;
//   BENCH_QUERIES (100): searches timed per mode.
import { PDFDocument } from 'pdf-lib';
import { union } from '../activities/sources/layout';
import { ocrPoolSize, stopOcr } from '../activities/sources/ocr';
import { mochaGlobalTeardown } from '../test/support/global';
import { createHarness, createTestWorkspace, startApi } from '../test/support/harness';
import { iou, scannedPdf, textPdf } from '../test/support/source-samples';

const textPages = Number(process.env.BENCH_TEXT_PAGES ?? 50);
const scanPages = Number(process.env.BENCH_SCAN_PAGES ?? 5);
const queries = Number(process.env.BENCH_QUERIES ?? 100);

const topics = ['invoices', 'travel', 'security', 'hiring', 'vacation', 'expenses', 'laptops', 'parking', 'meals'];
const fact = (page: number, p: number) =>
  `Rule ${page}-${p} about ${topics[(page + p) % topics.length]}: requests of type ${page * 10 + p} need approval from desk ${(page * 7 + p) % 97}.`;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers of this API, read field by field
const json = (res: Response): Promise<any> => res.json();

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor(q * s.length))].toFixed(1));
};

async function main() {
  const h = await createHarness();
  const api = await startApi(h);
  const { key } = await createTestWorkspace(h);
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${api.url}${path}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } });

  async function indexTimed(name: string, bytes: Uint8Array): Promise<{ seconds: number; passages: number }> {
    const form = new FormData();
    form.append('files', new Blob([Buffer.from(bytes)]), `${name}.pdf`);
    form.append('name', name);
    const t0 = performance.now();
    const [source] = (await json(await call('/v1/sources', { method: 'POST', body: form }))).data;
    for (;;) {
      const s = await json(await call(`/v1/sources/${source.id}`));
      if (s.latest_version.status !== 'indexing') {
        if (s.latest_version.status !== 'ready') throw new Error(JSON.stringify(s.latest_version));
        return { seconds: (performance.now() - t0) / 1000, passages: s.latest_version.passages };
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  // A text PDF: three paragraphs of two lines per page.
  const text = await textPdf(
    Array.from({ length: textPages }, (_, i) =>
      Array.from({ length: 3 }, (_, p) => [fact(i + 1, p + 1), 'See the handbook for exceptions and deadlines.']),
    ),
    11,
  );
  const textRun = await indexTimed('Handbook', text.bytes);
  console.log(
    `text PDF: ${textPages} pages, ${textRun.passages} passages in ${textRun.seconds.toFixed(1)} s (${(textPages / textRun.seconds).toFixed(1)} pages/s, with embeddings)`,
  );

  // A scanned PDF: image-only pages, read by OCR.
  const scan = await scannedPdf([
    ['Invoice 4471 from Globex Corporation', 'is due on the first of June.'],
    ['Late payments incur a fee of two percent per month.'],
  ]);
  const scanDoc = await PDFDocument.create();
  const one = await PDFDocument.load(scan.bytes);
  for (let i = 0; i < scanPages; i++) scanDoc.addPage((await scanDoc.copyPages(one, [0]))[0]);
  const scanRun = await indexTimed('Scans', await scanDoc.save());
  console.log(
    `scanned PDF: ${scanPages} pages in ${scanRun.seconds.toFixed(1)} s (${(scanRun.seconds / scanPages).toFixed(2)} s/page, OCR pool of ${ocrPoolSize()})`,
  );
  const search = async (query: string, sources: string[], topK = 5) =>
    (
      await json(
        await call('/v1/sources/search', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query, sources, top_k: topK }),
        }),
      )
    ).data;
  const [ocrHit] = await search('late payment fee', ['Scans'], 1);
  const ocrIou = iou(union(ocrHit.boxes), scan.boxes[1]);

  // Retrieval: latency and whether the paragraph asked about comes first, full-text only and hybrid.
  const measure = async () => {
    const ms: number[] = [];
    let top1 = 0;
    for (let q = 0; q < queries; q++) {
      const page = (q % textPages) + 1;
      const p = (q % 3) + 1;
      const t0 = performance.now();
      const [hit] = await search(`which desk approves requests of type ${page * 10 + p}?`, ['Handbook']);
      ms.push(performance.now() - t0);
      if (hit?.page === page && hit?.paragraph === p) top1++;
    }
    return { p50: quantile(ms, 0.5), p95: quantile(ms, 0.95), top1: Number((top1 / queries).toFixed(2)) };
  };
  process.env.CADRE_EMBEDDINGS = 'off';
  const fullText = await measure();
  delete process.env.CADRE_EMBEDDINGS;
  const hybrid = await measure();
  console.log(`full-text search: p50 ${fullText.p50} ms, p95 ${fullText.p95} ms, top-1 ${fullText.top1}`);
  console.log(`hybrid search: p50 ${hybrid.p50} ms, p95 ${hybrid.p95} ms, top-1 ${hybrid.top1}`);

  await api.close();
  await h.close();
  await stopOcr();
  await mochaGlobalTeardown();
  console.log(
    JSON.stringify({
      text_pdf_pages: textPages,
      text_pdf_passages: textRun.passages,
      text_pdf_s: Number(textRun.seconds.toFixed(2)),
      text_pdf_pages_per_s: Number((textPages / textRun.seconds).toFixed(2)),
      scan_pages: scanPages,
      scan_s: Number(scanRun.seconds.toFixed(2)),
      scan_s_per_page: Number((scanRun.seconds / scanPages).toFixed(2)),
      ocr_pool: ocrPoolSize(),
      ocr_box_iou: Number(ocrIou.toFixed(2)),
      queries,
      fulltext_p50_ms: fullText.p50,
      fulltext_p95_ms: fullText.p95,
      fulltext_top1: fullText.top1,
      hybrid_p50_ms: hybrid.p50,
      hybrid_p95_ms: hybrid.p95,
      hybrid_top1: hybrid.top1,
    }),
  );
}

main().catch(async (err) => {
  console.error(err);
  await mochaGlobalTeardown();
  process.exit(1);
});
