// Sources end to end against the real Temporal and Postgres servers: upload through the API, indexing as a
// workflow, retrieval from runs, and citations that open. Every document is made by the test (support/).
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startApi,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';
import {
  doc,
  docx,
  encryptedDocx,
  encryptedPdf,
  iou,
  pptx,
  scannedPdf,
  textImage,
  textPdf,
  workbook,
  zipBomb,
} from '../support/source-samples';
import { decideUpdate } from '../../workflows/contracts';
import { checkedFetch } from '../support/openapi-check';
import {
  reply,
  startFakeAnthropic,
  text,
  toolResultsOf,
  toolUse,
  turnOf,
  type FakeAnthropic,
} from '../fakes/anthropic';
import { union, type Box } from '../../activities/sources/layout';
import { stopOcr } from '../../activities/sources/ocr';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = any;
const json = (res: Response): Promise<Json> => res.json();

describe('sources and retrieval', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let ws: string;

  let fake: FakeAnthropic;
  let site: http.Server;
  let siteHost: string;

  before(async () => {
    fake = await startFakeAnthropic();
    // A small web site for URL sources: a page, a redirect to it, and a missing page.
    site = http.createServer((req, res) => {
      if (req.url === '/moved') res.writeHead(302, { location: '/handbook.html' }).end();
      else if (req.url === '/api/policies')
        if (req.headers.authorization === 'Bearer endpoint-token-1234')
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end('{"policy": "Laptops are replaced every four years."}');
        else res.writeHead(401).end('credentials required');
      else if (req.url === '/handbook.html')
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            '<html><head><title>Travel handbook</title></head><body><nav>Home | Jobs | Contact</nav><article><p>Book train tickets at least two weeks before a trip, in second class.</p><p>Hotel nights are reimbursed up to 120 euros in capital cities.</p></article><footer>Imprint and cookie settings</footer></body></html>',
          );
      else res.writeHead(404).end('not here');
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    siteHost = `127.0.0.1:${(site.address() as { port: number }).port}`;
    h = await createHarness({
      config: {
        model: { apiKey: 'test', baseUrl: fake.url, name: 'claude-sonnet-4-6' },
        http: { allowHosts: [siteHost] },
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await fake?.close();
    await new Promise((r) => site?.close(r));
    await stopOcr();
  });

  const call = (path: string, init: RequestInit & { json?: unknown; as?: string } = {}) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${init.as ?? key}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
    // Every answer is checked against the OpenAPI document on its way to the test.
    return checkedFetch(`${api.url}${path}`, {
      ...init,
      headers,
      body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
    });
  };

  async function upload(files: { name: string; content: Uint8Array | string }[], name?: string): Promise<Json[]> {
    const form = new FormData();
    if (name) form.append('name', name);
    for (const f of files)
      form.append('files', new Blob([typeof f.content === 'string' ? f.content : Buffer.from(f.content)]), f.name);
    const res = await call('/v1/sources', { method: 'POST', body: form });
    const body = await json(res);
    assert.equal(res.status, 202, JSON.stringify(body));
    return body.data;
  }

  /** Polls the source until its newest version has finished indexing (ready or failed). */
  async function indexed(sourceId: string, timeoutMs = 240_000): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const source = await json(await call(`/v1/sources/${sourceId}`));
      if (source.latest_version && source.latest_version.status !== 'indexing') return source;
      if (Date.now() > deadline) throw new Error(`source still indexing: ${JSON.stringify(source.latest_version)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async function search(query: string, sources?: string[], top_k = 5): Promise<Json[]> {
    const res = await call('/v1/sources/search', { method: 'POST', json: { query, sources, top_k } });
    assert.equal(res.status, 200);
    return (await json(res)).data;
  }

  describe('text formats', () => {
    const samples = [
      {
        name: 'handbook.txt',
        content:
          'Welcome to Acme.\n\nOffice hours are nine to five.\nLunch is at noon.\n\nThe parking garage closes at midnight.',
        query: 'parking garage',
        paragraph: 3,
        text: 'The parking garage closes at midnight.',
      },
      {
        name: 'guide.md',
        content: '# Onboarding\n\nRead the wiki first.\n\n## Laptops\n\nEvery engineer receives a laptop on day one.\n',
        query: 'laptop engineer',
        paragraph: 2, // read under its heading
        text: 'Laptops\nEvery engineer receives a laptop on day one.',
      },
      {
        name: 'vendors.csv',
        content: 'vendor,city,terms\nAcme,Berlin,net 30\nGlobex,Lisbon,net 45\nInitech,Oslo,net 60\n',
        query: 'Lisbon',
        paragraph: 3, // row 3 of the sheet: the header is row 1
        text: 'vendor: Globex; city: Lisbon; terms: net 45',
      },
      {
        name: 'products.json',
        content: JSON.stringify([
          { sku: 'A-1', name: 'anvil', weight_kg: 50 },
          { sku: 'R-2', name: 'rocket skates', weight_kg: 4 },
        ]),
        query: 'rocket skates',
        paragraph: 2,
        text: 'sku: R-2\nname: rocket skates\nweight_kg: 4',
      },
      {
        name: 'catalog.xml',
        content:
          '<?xml version="1.0"?><catalog><book id="b1"><title>Gardening basics</title></book><book id="b2"><title>Astronomy for beginners</title><year>2021</year></book></catalog>',
        query: 'astronomy',
        paragraph: 2,
        text: 'book.title: Astronomy for beginners\nbook.year: 2021\nbook.id: b2',
      },
      {
        name: 'policy.html',
        content: `<html><head><title>Leave policy</title></head><body><nav><a href="/">Home</a> <a href="/jobs">Jobs</a></nav><main><article><h1>Leave policy</h1><p>Employees get twenty-eight days of paid leave every year, plus public holidays in their country.</p><p>Unused leave can be carried over until the end of March of the following year, up to five days.</p></article></main><footer>Copyright Acme, all rights reserved, menu sitemap</footer></body></html>`,
        query: 'carried over unused leave',
        paragraph: 3,
        text: 'Unused leave can be carried over until the end of March of the following year, up to five days.',
      },
    ];

    it('indexes txt, md, csv, json, xml and html uploaded at once, each a source with its paragraphs', async () => {
      const created = await upload(samples.map((s) => ({ name: s.name, content: s.content })));
      assert.deepEqual(
        created.map((s) => s.name),
        samples.map((s) => s.name),
      );
      for (const [i, source] of created.entries()) {
        const done = await indexed(source.id);
        assert.equal(done.latest_version.status, 'ready', JSON.stringify(done.latest_version));
        assert.equal(done.current_version, 1);
        assert.deepEqual(done.latest_version.progress, { pages_done: 1, pages_total: 1 });
        const [hit] = await search(samples[i].query, [samples[i].name]);
        assert.ok(hit, `nothing found in ${samples[i].name}`);
        assert.equal(hit.source, samples[i].name);
        assert.equal(hit.text, samples[i].text);
        assert.equal(hit.paragraph, samples[i].paragraph);
        assert.equal(hit.page, null);
        assert.equal(hit.version, 1);
      }
      const html = await search('Copyright sitemap menu', ['policy.html'], 10);
      assert.ok(
        html.every((p) => !/Copyright|sitemap/.test(p.text)),
        'the page footer is not main text',
      );
    });
  });

  describe('web pages', () => {
    it('fetches a URL (following a redirect) and indexes the main text of the page', async () => {
      const res = await call('/v1/sources', {
        method: 'POST',
        json: { url: `http://${siteHost}/moved`, name: 'Travel handbook' },
      });
      assert.equal(res.status, 202);
      const [source] = (await json(res)).data;
      assert.equal(source.kind, 'url');
      const done = await indexed(source.id);
      assert.equal(done.latest_version.status, 'ready', JSON.stringify(done.latest_version));
      assert.equal(done.latest_version.documents[0].format, 'html');
      const [hit] = await search('hotel reimbursed', ['Travel handbook'], 1);
      assert.equal(hit.text, 'Hotel nights are reimbursed up to 120 euros in capital cities.');
      assert.equal(hit.paragraph, 3); // the title, then the two paragraphs
      assert.equal(hit.document, `http://${siteHost}/moved`);
      const all = await search('Imprint cookie settings Home Jobs Contact', ['Travel handbook'], 10);
      assert.ok(
        all.every((p: Json) => !/Imprint|Contact/.test(p.text)),
        'menus and footers are not indexed',
      );
    });

    it('fetches an API endpoint with its Authorization header, kept sealed', async () => {
      const url = `http://${siteHost}/api/policies`;
      const withKey = (
        await json(
          await call('/v1/sources', {
            method: 'POST',
            json: { url, name: 'Policy API', auth_header: 'Bearer endpoint-token-1234' },
          }),
        )
      ).data[0];
      assert.equal((await indexed(withKey.id)).latest_version.status, 'ready');
      const [hit] = await search('laptops replaced', ['Policy API'], 1);
      assert.match(hit.text, /every four years/);
      const stored = await h.stack
        .knex('source_documents')
        .whereNotNull('auth_header_sealed')
        .select(h.stack.knex.raw('row_to_json(source_documents)::text as row'));
      assert.ok(
        stored.length > 0 && stored.every((r: { row: string }) => !r.row.includes('endpoint-token-1234')),
        'sealed at rest',
      );
      const without = (
        await json(await call('/v1/sources', { method: 'POST', json: { url, name: 'Policy API, no key' } }))
      ).data[0];
      const failed = await indexed(without.id);
      assert.equal(failed.latest_version.status, 'failed');
      assert.match(JSON.stringify(failed.latest_version), /answered 401/);
    });

    it('fails a URL source that is internal (the address guard) or missing, with the reason', async () => {
      const port = siteHost.split(':')[1];
      const cases = [
        { url: `http://localhost:${port}/handbook.html`, reason: /private or internal address/ },
        { url: `http://${siteHost}/gone`, reason: /answered 404/ },
      ];
      for (const c of cases) {
        const [source] = (await json(await call('/v1/sources', { method: 'POST', json: { url: c.url } }))).data;
        const done = await indexed(source.id);
        assert.equal(done.latest_version.status, 'failed');
        assert.match(done.latest_version.error, c.reason);
      }
      const bad = await call('/v1/sources', { method: 'POST', json: { url: 'ftp://example.com/x' } });
      assert.equal(bad.status, 422);
    });
  });

  describe('PDF with a text layer', () => {
    let pdfBoxes: Box[][];
    let sourceId: string;

    before(async () => {
      const pdf = await textPdf([
        [
          ['Acme was founded in 1952 in Springfield.', 'It makes anvils and rocket skates.'],
          ['The board meets every quarter.'],
        ],
        [
          ['Refunds are paid within fourteen days', 'of receiving the returned goods.'],
          ['Shipping is free above 100 euros.'],
        ],
      ]);
      pdfBoxes = pdf.boxes;
      const [source] = await upload([{ name: 'company-facts.pdf', content: pdf.bytes }], 'Company facts');
      sourceId = source.id;
      assert.equal(source.name, 'Company facts');
      const done = await indexed(sourceId);
      assert.equal(done.latest_version.status, 'ready', JSON.stringify(done.latest_version));
      assert.deepEqual(done.latest_version.progress, { pages_done: 2, pages_total: 2 });
    });

    it('finds a passage with its page, paragraph and the boxes of its lines', async () => {
      const [hit] = await search('how fast are refunds paid?', ['Company facts']);
      assert.equal(hit.text, 'Refunds are paid within fourteen days of receiving the returned goods.');
      assert.equal(hit.page, 2);
      assert.equal(hit.paragraph, 1);
      assert.equal(hit.document, 'company-facts.pdf');
      assert.deepEqual(hit.page_size, { width: 612, height: 792, unit: 'pt' });
      assert.equal(hit.boxes.length, 2);
      assert.ok(iou(union(hit.boxes), pdfBoxes[1][0]) >= 0.7, JSON.stringify([union(hit.boxes), pdfBoxes[1][0]]));
      const [second] = await search('board meets quarter', ['Company facts']);
      assert.deepEqual([second.page, second.paragraph], [1, 2]);
    });

    it('opens a citation: the passage, its boxes and the page picture, with the boxes highlighted on request', async () => {
      const [hit] = await search('shipping free', ['Company facts']);
      const res = await call(`/v1/passages/${hit.passage_id}`);
      assert.equal(res.status, 200);
      const citation = await json(res);
      assert.equal(citation.source.name, 'Company facts');
      assert.equal(citation.version, 1);
      assert.equal(citation.page, 2);
      assert.equal(citation.paragraph, 2);
      assert.deepEqual(citation.boxes, hit.boxes);
      const stored = () =>
        h.stack
          .knex('source_pages as g')
          .join('passages as p', function () {
            this.on('p.document_id', '=', 'g.document_id').andOn('p.page', '=', 'g.page');
          })
          .where('p.id', hit.passage_id)
          .first(h.stack.knex.raw('g.image is not null as kept'));
      assert.equal((await stored()).kept, false, 'a text page is indexed without its picture');
      const image = await call(new URL(citation.page_image_url).pathname);
      assert.equal((await stored()).kept, true, 'drawn when first opened, then kept');
      assert.equal(image.status, 200);
      assert.equal(image.headers.get('content-type'), 'image/png');
      const png = Buffer.from(await image.arrayBuffer());
      assert.equal(png.readUInt32BE(16), 1224); // 612 pt at 144 dpi
      const highlighted = await call(`${new URL(citation.highlighted_image_url).pathname}?highlight=true`);
      assert.equal(highlighted.status, 200);
      assert.notDeepEqual(Buffer.from(await highlighted.arrayBuffer()), png);
      assert.equal((await call('/v1/passages/999999999')).status, 404);
    });
  });

  describe('OCR', () => {
    it('reads a scanned PDF page (no text layer) and returns a box over the text it found', async () => {
      const scan = await scannedPdf([
        ['Invoice 4471 from Globex Corporation', 'is due on the first of June.'],
        ['Late payments incur a fee of two percent per month.'],
      ]);
      const [source] = await upload([{ name: 'scan.pdf', content: scan.bytes }], 'Scanned invoices');
      const done = await indexed(source.id);
      assert.equal(done.latest_version.status, 'ready', JSON.stringify(done.latest_version));
      const [hit] = await search('late payment fee', ['Scanned invoices']);
      assert.ok(hit, 'the OCR text was not found');
      assert.match(hit.text, /Late payments incur a fee of two percent per month/);
      assert.deepEqual([hit.page, hit.paragraph], [1, 2]);
      assert.ok(hit.ocr_confidence > 60);
      const box = union(hit.boxes);
      const overlap = iou(box, scan.boxes[1]);
      assert.ok(
        overlap >= 0.5,
        `IoU ${overlap.toFixed(2)}: ${JSON.stringify(box)} vs ${JSON.stringify(scan.boxes[1])}`,
      );
      const citation = await json(await call(`/v1/passages/${hit.passage_id}`));
      assert.equal(citation.ocr, true);
      assert.ok(citation.words.length >= 9);
      assert.ok(citation.words.every((w: Json) => w.confidence >= 0 && w.box.width > 0));
    });

    it('reads PNG, JPEG, GIF and TIFF images, with boxes in the image pixels', async () => {
      const images = {
        png: ['The warehouse in Rotterdam opens at six.'],
        jpeg: ['Receipt total forty two euros paid by card.'],
        gif: ['Form field applicant surname Müller.'],
        tiff: ['Delivery note for twelve pallets of bricks.'],
      } as const;
      const made = await Promise.all(
        Object.entries(images).map(async ([format, lines]) => ({
          format,
          ...(await textImage(format as 'png', [[...lines]])),
        })),
      );
      const created = await upload(
        made.map((m) => ({ name: `picture.${m.format === 'jpeg' ? 'jpg' : m.format}`, content: m.bytes })),
      );
      for (const [i, source] of created.entries()) {
        const done = await indexed(source.id);
        assert.equal(done.latest_version.status, 'ready', JSON.stringify(done.latest_version));
        const words = images[made[i].format as keyof typeof images][0].split(' ').slice(1, 4).join(' ');
        const [hit] = await search(words, [source.name]);
        assert.ok(hit, `nothing found in ${source.name} for "${words}"`);
        assert.match(hit.text.toLowerCase(), new RegExp(words.toLowerCase()));
        assert.equal(hit.page, 1);
        assert.equal(hit.page_size.unit, 'px');
        assert.ok(iou(union(hit.boxes), made[i].boxes[0]) >= 0.5, `${made[i].format}: box off`);
      }
    });
  });

  describe('Office formats', () => {
    it('indexes docx, doc, xlsx, xls and pptx with their pages (sheets, slides) and paragraphs (rows)', async () => {
      const sheets = {
        Costs: [
          ['item', 'price'],
          ['paper', 5],
          ['toner cartridge', 80],
        ],
        Staff: [
          ['name', 'team'],
          ['Ada Lovelace', 'analytics'],
        ],
      };
      const files = [
        { name: 'memo.docx', content: await docx(['Memo to all staff.', 'The cafeteria reopens on Monday.']) },
        { name: 'old-memo.doc', content: doc(['Archive memo.', 'The fax machine was retired in 2009.']) },
        { name: 'budget.xlsx', content: workbook(sheets, 'xlsx') },
        { name: 'budget-old.xls', content: workbook(sheets, 'xls') },
        {
          name: 'deck.pptx',
          content: await pptx([
            ['Quarterly review', 'Revenue grew twelve percent'],
            ['Hiring', 'Nine engineers join in May'],
          ]),
        },
      ];
      const created = await upload(files);
      for (const source of created) {
        const done = await indexed(source.id);
        assert.equal(done.latest_version.status, 'ready', `${source.name}: ${JSON.stringify(done.latest_version)}`);
      }
      const expect = async (name: string, query: string, text: string, page: number | null, paragraph: number) => {
        const [hit] = await search(query, [name]);
        assert.ok(hit, `nothing found in ${name}`);
        assert.deepEqual([hit.text, hit.page, hit.paragraph], [text, page, paragraph], name);
      };
      await expect('memo.docx', 'cafeteria', 'The cafeteria reopens on Monday.', null, 2);
      await expect('old-memo.doc', 'fax machine', 'The fax machine was retired in 2009.', null, 2);
      // a row is read under its sheet's name, as a paragraph under its heading
      await expect('budget.xlsx', 'toner', 'Costs\nitem: toner cartridge; price: 80', 1, 3);
      await expect('budget.xlsx', 'Lovelace', 'Staff\nname: Ada Lovelace; team: analytics', 2, 2);
      await expect('budget-old.xls', 'toner', 'Costs\nitem: toner cartridge; price: 80', 1, 3);
      await expect('deck.pptx', 'engineers', 'Nine engineers join in May', 2, 2);
    });
  });

  describe('limits and files that cannot be read', () => {
    it('answers 413 for an image over 20 MB or a document over 50 MB, 415 for a kind of file it cannot read', async () => {
      const form = (name: string, bytes: number) => {
        const f = new FormData();
        f.append('files', new Blob([Buffer.alloc(bytes)]), name);
        return f;
      };
      const image = await call('/v1/sources', { method: 'POST', body: form('photo.png', 21 * 1024 * 1024) });
      assert.equal(image.status, 413);
      const imageBody = await json(image);
      assert.equal(imageBody.code, 'file_too_large');
      assert.match(imageBody.detail, /photo\.png is 21\.0 MB; images can be at most 20\.0 MB/);
      const big = await call('/v1/sources', { method: 'POST', body: form('manual.pdf', 51 * 1024 * 1024) });
      assert.equal(big.status, 413);
      assert.match((await json(big)).detail, /manual\.pdf is more than 50\.0 MB; documents can be at most 50\.0 MB/);
      const exe = await call('/v1/sources', { method: 'POST', body: form('setup.exe', 10) });
      assert.equal(exe.status, 415);
      assert.match((await json(exe)).detail, /setup\.exe: Cadre cannot read this kind of file/);
      assert.equal((await json(await call('/v1/sources'))).data.filter((s: Json) => s.name === 'photo.png').length, 0);
    });

    it('marks a source failed with a reason for a lying extension, a damaged or protected file and a zip bomb', async () => {
      const png = (await textImage('png', [['just a picture']])).bytes;
      const cases = [
        { name: 'report.pdf', content: png, reason: /report\.pdf is named like a PDF but its content is a PNG image/ },
        {
          name: 'broken.pdf',
          content: Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage without pages'),
          reason: /broken\.pdf: the PDF cannot be read|broken\.pdf has no pages/,
        },
        { name: 'secret.pdf', content: encryptedPdf(), reason: /secret\.pdf: the PDF is password-protected/ },
        { name: 'locked.docx', content: encryptedDocx(), reason: /locked\.docx is password-protected/ },
        { name: 'bomb.docx', content: await zipBomb(320), reason: /bomb\.docx: .*more than 300 MB when unpacked/ },
        { name: 'data.json', content: '{"unterminated": ', reason: /data\.json: the file is not valid JSON/ },
        { name: 'empty.txt', content: '', reason: /empty\.txt is empty/ },
      ];
      const created = await upload(cases.map((c) => ({ name: c.name, content: c.content })));
      for (const [i, source] of created.entries()) {
        const done = await indexed(source.id);
        assert.equal(done.latest_version.status, 'failed', source.name);
        assert.equal(done.current_version, null);
        assert.match(done.latest_version.error, cases[i].reason);
        assert.equal(done.latest_version.documents[0].status, 'failed');
      }
      // the service is still up and indexing
      const [ok] = await upload([{ name: 'after.txt', content: 'Still standing after the bad files.' }]);
      assert.equal((await indexed(ok.id)).latest_version.status, 'ready');
    });

    it('lets a read-only key list sources but not upload', async () => {
      const { key: readOnly } = await createTestWorkspace(h, { scopes: ['read'] });
      assert.equal((await call('/v1/sources', { as: readOnly })).status, 200);
      const form = new FormData();
      form.append('files', new Blob(['x']), 'a.txt');
      const res = await call('/v1/sources', { method: 'POST', body: form, as: readOnly });
      assert.equal(res.status, 403);
      assert.equal((await json(res)).code, 'missing_scope');
    });
  });

  describe('versions by replacement', () => {
    it('archives the old version, keeps its citations open, and lets a run under way keep its version', async () => {
      const v1 = await textPdf([[['Widgets cost ten euros each.']]]);
      const [source] = await upload([{ name: 'prices-2025.pdf', content: v1.bytes }], 'Price list');
      await indexed(source.id);
      const [oldHit] = await search('widgets cost', ['Price list']);
      assert.equal(oldHit.version, 1);

      const agent = await createLiveAgent(h, ws, {
        name: 'price check',
        sources: ['Price list'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'gate' },
          { kind: 'approval', id: 'gate', next: 'look' },
          { kind: 'retrieve', id: 'look', query: '{{q}}', top_k: 1 },
        ],
      });
      const early = await startTestRun(h, ws, agent.id, JSON.stringify([{ q: 'widgets cost' }]));
      await waitForRun(h, early.id, (r) => r.status === 'needs_review');

      const v2 = await textPdf([[['Widgets cost twelve euros each from May.']]]);
      const [replaced] = await upload([{ name: 'prices-2026.pdf', content: v2.bytes }], 'Price list');
      assert.equal(replaced.id, source.id);
      assert.equal(replaced.latest_version.version, 2);
      const done = await indexed(source.id);
      assert.equal(done.current_version, 2, JSON.stringify(done.latest_version));
      assert.deepEqual(
        done.versions.map((v: Json) => [v.version, v.status, v.documents[0].file_name]),
        [
          [2, 'ready', 'prices-2026.pdf'],
          [1, 'archived', 'prices-2025.pdf'],
        ],
      );
      const [newHit] = await search('widgets cost', ['Price list']);
      assert.equal(newHit.version, 2);
      assert.match(newHit.text, /twelve/);

      // the old citation still opens, with its page picture
      const citation = await json(await call(`/v1/passages/${oldHit.passage_id}`));
      assert.deepEqual([citation.version, citation.version_status], [1, 'archived']);
      assert.match(citation.text, /ten euros/);
      assert.equal((await call(new URL(citation.page_image_url).pathname)).status, 200);

      // the archived version stays readable, passage by passage
      const archived = await json(await call(`/v1/sources/${source.id}/versions/1/passages`));
      assert.deepEqual(
        archived.data.map((p: Json) => [p.passage_id, p.document, p.page, p.paragraph, p.text]),
        [[oldHit.passage_id, 'prices-2025.pdf', 1, 1, 'Widgets cost ten euros each.']],
      );
      assert.equal(archived.next_cursor, null);
      const missing = await call(`/v1/sources/${source.id}/versions/3/passages`);
      assert.equal(missing.status, 404);
      assert.match((await json(missing)).detail, /source "Price list" has no version 3/);

      // the run that started before the replacement searches version 1; a new run searches version 2
      const approve = async (runId: string) => {
        await waitForRun(h, runId, (r) => r.status === 'needs_review');
        const approval = await h.stack.knex('approvals').where({ run_id: runId }).first();
        await h.client.workflow
          .getHandle(approval.workflow_id)
          .executeUpdate(decideUpdate, { args: [{ approvalId: approval.id, approve: true, by: 'reviewer@test' }] });
        return waitForRun(h, runId);
      };
      assert.equal((await approve(early.id)).status, 'completed');
      assert.match((await items(h, early.id))[0].data.passages[0].text, /ten euros/);
      const late = await startTestRun(h, ws, agent.id, JSON.stringify([{ q: 'widgets cost' }]));
      await approve(late.id);
      const [latePassage] = (await items(h, late.id))[0].data.passages;
      assert.deepEqual([latePassage.version, /twelve/.test(latePassage.text)], [2, true]);
    });

    it('deletes a source with its versions, so its citations no longer open', async () => {
      const [source] = await upload([{ name: 'old.txt', content: 'The old office was on Elm Street.' }], 'Old office');
      await indexed(source.id);
      const [hit] = await search('Elm Street', ['Old office']);
      assert.equal((await call(`/v1/sources/${source.id}`, { method: 'DELETE' })).status, 204);
      assert.equal((await call(`/v1/sources/${source.id}`)).status, 404);
      assert.equal((await call(`/v1/passages/${hit.passage_id}`)).status, 404);
      const gone = await call('/v1/sources/search', {
        method: 'POST',
        json: { query: 'Elm Street', sources: ['Old office'] },
      });
      assert.equal(gone.status, 422);
      assert.match((await json(gone)).detail, /no source named "Old office"/);
    });

    it('keeps the current version when a replacement fails', async () => {
      const [source] = await upload([{ name: 'faq.txt', content: 'Returns are accepted for 30 days.' }], 'FAQ');
      await indexed(source.id);
      await upload([{ name: 'faq.json', content: '{broken' }], 'FAQ');
      const after = await indexed(source.id);
      assert.deepEqual([after.status, after.current_version], ['failed', 1]);
      const [hit] = await search('returns accepted', ['FAQ']);
      assert.equal(hit.version, 1);
    });
  });

  describe('hybrid retrieval', () => {
    it('embeds passages with the local model and finds a passage that shares no word with the question', async () => {
      const [source] = await upload(
        [
          {
            name: 'plans.txt',
            content:
              'We plan to recruit nine software developers in May.\n\nThe cafeteria reopens on Monday with a new menu.\n\nParking permits are renewed every January.\n\nLunch in the canteen costs five euros.',
          },
        ],
        'Plans',
      );
      await indexed(source.id);
      const vectors = await h.stack
        .knex('passages')
        .where({ source_id: source.id })
        .whereNotNull('embedding')
        .count({ n: '*' })
        .first();
      assert.equal(Number(vectors?.n), 4);
      const [hit] = await search('how many engineers will we hire?', ['Plans'], 1);
      assert.ok(hit, 'vector search found nothing');
      assert.equal(hit.text, 'We plan to recruit nine software developers in May.');
      assert.equal(hit.paragraph, 1);
      // a passage both searches find scores above one only the vector search found
      const both = await search('cafeteria menu', ['Plans'], 3);
      assert.deepEqual(
        both.map((p) => p.paragraph),
        [2, 4],
      );
      assert.ok(both[0].score > both[1].score);
    });
  });

  describe('retrieve nodes in runs', () => {
    it('saves the passages found for each item and keeps them as the run’s source context', async () => {
      const pdf = await textPdf([[['Our office dog is called Biscuit and loves tennis balls.']]]);
      const [source] = await upload([{ name: 'pets.pdf', content: pdf.bytes }], 'Office pets');
      await indexed(source.id);
      const agent = await createLiveAgent(h, ws, {
        name: 'answer questions',
        sources: ['Office pets'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'look' },
          { kind: 'retrieve', id: 'look', query: '{{question}}', top_k: 3 },
        ],
      });
      const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ question: 'what is the dog called?' }]));
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'completed', done.error);
      const [item] = await items(h, run.id);
      const [p] = item.data.passages;
      assert.equal(p.source, 'Office pets');
      assert.equal(p.version, 1);
      assert.equal(p.page, 1);
      assert.equal(p.paragraph, 1);
      assert.match(p.text, /Biscuit/);
      assert.ok(p.score > 0);
      assert.match(p.citation_url, /\/v1\/passages\/\d+$/);
      const context = await json(await call(`/v1/runs/${run.id}/source-context`));
      assert.equal(context.data.length, 1);
      assert.equal(context.data[0].query, 'what is the dog called?');
      assert.equal(context.data[0].passages[0].passage_id, p.passage_id);
    });

    it('offers llm nodes a search_sources tool and records what the model found', async () => {
      fake.setHandler((body) => {
        if (turnOf(body) === 0) return reply([toolUse('search_sources', { query: 'name of the office dog' })]);
        const found = JSON.parse(String(toolResultsOf(body)[0].content));
        return reply([
          text(`The dog is ${/Biscuit/.test(found[0].text) ? 'Biscuit' : 'unknown'} (page ${found[0].page}).`),
        ]);
      });
      const agent = await createLiveAgent(h, ws, {
        name: 'ask the model',
        sources: ['Office pets'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'ask' },
          { kind: 'llm', id: 'ask', instructions: 'Answer the question from the sources.' },
        ],
      });
      const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ question: 'what is the dog called?' }]));
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'completed', done.error);
      assert.equal((await items(h, run.id))[0].data.text, 'The dog is Biscuit (page 1).');
      const first = fake.requests[fake.requests.length - 2].body;
      assert.ok(first.tools?.some((t) => t.name === 'search_sources'));
      assert.match(JSON.stringify(first.system), /search these sources with search_sources: \\"Office pets\\"/);
      const context = await json(await call(`/v1/runs/${run.id}/source-context?item=0`));
      assert.deepEqual(
        context.data.map((c: Json) => [c.node_id, c.query, c.passages[0].source]),
        [['ask', 'name of the office dog', 'Office pets']],
      );
    });

    it('keeps the citations of passages the item retrieved, and drops and logs any other', async () => {
      // The model cites what it found, a passage it was never given, and the found one twice.
      fake.setHandler((body) => {
        if (turnOf(body) === 0) return reply([toolUse('search_sources', { query: 'office dog name' })]);
        const [found] = JSON.parse(String(toolResultsOf(body)[0].content));
        return reply([text(`The dog is Biscuit ${found.cite_as}, who loves tennis balls [P999999] ${found.cite_as}.`)]);
      });
      const agent = await createLiveAgent(h, ws, {
        name: 'cite the sources',
        sources: ['Office pets'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'ask' },
          { kind: 'llm', id: 'ask', instructions: 'Answer the question from the sources.' },
        ],
      });
      const run = await startTestRun(h, ws, agent.id, JSON.stringify([{ question: 'what is the dog called?' }]));
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'completed', done.error);
      const system = JSON.stringify(fake.requests[fake.requests.length - 2].body.system);
      assert.match(system, /cite_as marker exactly as given/);

      const context = await json(await call(`/v1/runs/${run.id}/source-context?item=0`));
      const found = context.data[0].passages[0];
      const marker = `[P${found.passage_id}]`;
      assert.equal(
        (await items(h, run.id))[0].data.text,
        `The dog is Biscuit ${marker}, who loves tennis balls ${marker}.`,
        'the citation of a passage never retrieved is taken out of the answer',
      );
      assert.match(context.citations[0]?.citation_url, new RegExp(`/v1/passages/${found.passage_id}$`));
      assert.deepEqual(
        context.citations.map(({ citation_url: _url, ...c }: Json) => c),
        [
          {
            item_seq: 0,
            node_id: 'ask',
            passage_id: found.passage_id,
            source: 'Office pets',
            version: 1,
            page: 1,
            paragraph: 1,
          },
        ],
      );
      const logs = await json(await call(`/v1/runs/${run.id}/logs`));
      const dropped = logs.data.filter((l: Json) => /dropped/.test(l.message));
      assert.deepEqual(
        dropped.map((l: Json) => [l.level, l.node_id, l.item_seq, l.message]),
        [['warn', 'ask', 0, 'dropped a citation of passages this item never retrieved: [P999999]']],
      );
    });

    it('warns when an agent lists an unknown source or more than 20 sources', async () => {
      const names = Array.from({ length: 21 }, (_, i) => `Manual ${i + 1}`);
      const res = await call('/v1/agents', {
        method: 'POST',
        json: { name: 'many sources', sources: ['Office pets', ...names], nodes: [{ kind: 'input', id: 'in' }] },
      });
      assert.equal(res.status, 201);
      const { warnings } = await json(res);
      assert.match(warnings[0], /the agent uses 22 sources; 10 to 20 are recommended/);
      assert.equal(warnings.length, 22); // and one per unknown name
      assert.match(warnings[1], /no source named "Manual 1"/);
    });

    it('refuses a retrieve node searching a source the agent does not list', async () => {
      const res = await call('/v1/agents', {
        method: 'POST',
        json: {
          name: 'x',
          sources: ['Office pets'],
          nodes: [
            { kind: 'input', id: 'in', next: 'r' },
            { kind: 'retrieve', id: 'r', query: '{{text}}', sources: ['Secret plans'] },
          ],
        },
      });
      assert.equal(res.status, 422);
      const body = await json(res);
      assert.equal(body.code, 'retrieve_source_not_attached');
      assert.match(body.detail, /"Secret plans"/);
    });
  });
});
