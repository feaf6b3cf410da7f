// Sources as people lay them out and name them, end to end against the real Temporal and Postgres servers: a
// version with a broken file among good ones ends with every document in a final state and says which failed;
// a receipt photo is read as blocks, not lines; tables keep their rows; a question naming a document by its header
// finds the answer, not the header; an unknown source name is an error.
import assert from 'node:assert/strict';
import http from 'node:http';
import { createCanvas } from '@napi-rs/canvas';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { docx, textImage, textPdf } from '../support/source-samples';
import { checkedFetch } from '../support/openapi-check';
import type { Box } from '../../activities/sources/layout';
import { stopOcr } from '../../activities/sources/ocr';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = any;
const json = (res: Response): Promise<Json> => res.json();

/**
 * A till receipt as a PNG, items left and amounts right, a blank line between its sections; with the band of
 * each line (its top and bottom, in pixels) for checking the boxes of a citation.
 */
function receipt(): { bytes: Buffer; bands: Map<string, { top: number; bottom: number }> } {
  const sections = [
    [['CAFE LINDENHOF'], ['Lindenstrasse 12, 10969 Berlin']],
    [
      ['2 x Cappuccino', '7.60'],
      ['1 x Club sandwich', '12.90'],
      ['2 x Caesar salad', '25.80'],
      ['1 x Apple strudel', '6.50'],
    ],
    [
      ['TOTAL EUR', '86.40'],
      ['incl. VAT 19%', '13.80'],
    ],
    [['Thank you for your visit!']],
  ];
  const k = 3; // 216 dpi
  const pitch = 16 * k;
  const rows = sections.reduce((n, s) => n + s.length + 1, 0);
  const canvas = createCanvas(226 * k, (rows * 16 + 40) * k);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = 'white';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = 'black';
  ctx.font = `${10 * k}px monospace`;
  const bands = new Map<string, { top: number; bottom: number }>();
  let baseline = 30 * k;
  for (const section of sections) {
    for (const [left, right] of section) {
      ctx.fillText(left, 14 * k, baseline);
      if (right) ctx.fillText(right, canvas.width - 14 * k - ctx.measureText(right).width, baseline);
      bands.set(left, { top: baseline - 10 * k, bottom: baseline + 3 * k });
      baseline += pitch;
    }
    baseline += pitch;
  }
  return { bytes: canvas.toBuffer('image/png'), bands };
}

describe('sources as documents are laid out', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;

  let failing: http.Server;
  let failingHost: string;

  before(async () => {
    // A web server that is down: every request answers 503, so indexing retries it until the retries run out.
    failing = http.createServer((_req, res) => res.writeHead(503).end('down for maintenance'));
    await new Promise<void>((r) => failing.listen(0, '127.0.0.1', r));
    failingHost = `127.0.0.1:${(failing.address() as { port: number }).port}`;
    h = await createHarness({ config: { http: { allowHosts: [failingHost] } } as never });
    api = await startApi(h);
    key = (await createTestWorkspace(h)).key;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await new Promise((r) => failing?.close(r));
    await stopOcr();
  });

  const call = (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${key}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
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
  async function indexed(sourceId: string): Promise<Json> {
    const deadline = Date.now() + 240_000;
    for (;;) {
      const source = await json(await call(`/v1/sources/${sourceId}`));
      if (source.latest_version && source.latest_version.status !== 'indexing') return source;
      if (Date.now() > deadline) throw new Error(`source still indexing: ${JSON.stringify(source.latest_version)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  const search = async (query: string, sources: string[], top_k = 5): Promise<Json[]> => {
    const res = await call('/v1/sources/search', { method: 'POST', json: { query, sources, top_k } });
    assert.equal(res.status, 200);
    return (await json(res)).data;
  };

  const finalStates = ['done', 'failed', 'skipped'];

  describe('a version with a broken file among good ones', () => {
    it('fails naming the file that cannot be read, and no other document is left pending', async () => {
      const pdf = await textPdf(Array.from({ length: 4 }, (_, i) => [[`Page ${i + 1} of the handbook.`]]));
      const png = (await textImage('png', [['just a picture']])).bytes;
      const [source] = await upload(
        [
          { name: 'intro.txt', content: 'Welcome to the handbook.' },
          { name: 'scan.pdf', content: png }, // a picture named like a PDF
          { name: 'handbook.pdf', content: pdf.bytes },
          { name: 'notes.md', content: '# Notes\n\nNothing yet.' },
        ],
        'Handbook with a bad scan',
      );
      const version = (await indexed(source.id)).latest_version;
      assert.equal(version.status, 'failed');
      assert.match(version.error, /^scan\.pdf is named like a PDF but its content is a PNG image/);
      assert.deepEqual(
        version.documents.map((d: Json) => [d.file_name, d.status]),
        [
          ['intro.txt', 'skipped'],
          ['scan.pdf', 'failed'],
          ['handbook.pdf', 'skipped'],
          ['notes.md', 'skipped'],
        ],
      );
      assert.match(version.documents[1].error, /content is a PNG image/);
      for (const d of version.documents.filter((d: Json) => d.status === 'skipped'))
        assert.equal(d.error, 'not indexed, because scan.pdf failed');
    });

    it('names every file that cannot be read when several are broken', async () => {
      const [source] = await upload(
        [
          { name: 'a.json', content: '{"fine": true}' },
          { name: 'empty.txt', content: '' },
          { name: 'photo.pdf', content: (await textImage('png', [['x']])).bytes },
        ],
        'Two broken files',
      );
      const version = (await indexed(source.id)).latest_version;
      assert.match(version.error, /empty\.txt is empty.*; photo\.pdf is named like a PDF/);
      assert.deepEqual(
        version.documents.map((d: Json) => d.status),
        ['skipped', 'failed', 'failed'],
      );
    });

    it('ends every document when one fails while the others are being read, keeping no passages', async () => {
      const pdf = await textPdf(Array.from({ length: 24 }, (_, i) => [[`Rule ${i + 1} of the travel policy.`]]));
      const [source] = await upload(
        [
          { name: 'broken.json', content: '{"unterminated": ' },
          { name: 'policy.pdf', content: pdf.bytes },
          { name: 'contacts.txt', content: 'Ask the travel desk.' },
          { name: 'faq.md', content: 'Trains are booked two weeks ahead.' },
        ],
        'Travel policy with a broken file',
      );
      const version = (await indexed(source.id)).latest_version;
      assert.equal(version.status, 'failed');
      assert.match(version.error, /^broken\.json: the file is not valid JSON/);
      const [broken, ...others] = version.documents;
      assert.equal(broken.status, 'failed');
      for (const d of others) {
        assert.ok(finalStates.includes(d.status), `${d.file_name} is ${d.status}`);
        if (d.status === 'skipped') assert.equal(d.error, 'not indexed, because broken.json failed');
      }
      assert.ok(
        others.some((d: Json) => d.status === 'skipped'),
        'the documents after it are not read',
      );
      const passages = await h.stack.knex('passages').where({ source_id: source.id }).count({ n: '*' }).first();
      assert.equal(Number(passages?.n), 0);
    });
  });

  describe('a web page whose server keeps failing', () => {
    it('fails the version naming the page once the retries run out, and ends the page failed', async () => {
      const url = `http://${failingHost}/handbook.html`;
      const res = await call('/v1/sources', { method: 'POST', json: { url, name: 'Handbook online' } });
      assert.equal(res.status, 202);
      const version = (await indexed((await json(res)).data[0].id)).latest_version;
      assert.equal(version.status, 'failed');
      assert.equal(version.error, `${url}: indexing failed: ${failingHost} answered 503`);
      assert.deepEqual(
        version.documents.map((d: Json) => [d.status, d.error]),
        [['failed', `${failingHost} answered 503`]],
      );
    });
  });

  describe('layout', () => {
    it('finds a receipt total in one passage with the receipt, each line boxed where it was printed', async () => {
      const { bytes, bands } = receipt();
      const [source] = await upload([{ name: 'receipt.png', content: bytes }], 'Lunch receipt');
      assert.equal((await indexed(source.id)).latest_version.status, 'ready');
      const [hit] = await search('total of the bill at Cafe Lindenhof', ['Lunch receipt'], 1);
      // the closing "Thank you for your visit!" reads as a sentence, so it is left out as prose would be
      assert.match(hit.text, /^CAFE LINDENHOF .*Cappuccino 7\.60 .*TOTAL EUR 86\.40 incl\. VAT 19% 13\.80$/);
      assert.equal(hit.boxes.length, bands.size - 1, 'a box for each line');
      const centre = (b: Box) => b.y + b.height / 2;
      const total = bands.get('TOTAL EUR')!;
      assert.ok(
        hit.boxes.some((b: Box) => centre(b) > total.top && centre(b) < total.bottom),
        JSON.stringify([hit.boxes, total]),
      );
      const [before] = hit.boxes;
      const header = bands.get('CAFE LINDENHOF')!;
      assert.ok(centre(before) > header.top && centre(before) < header.bottom, 'boxes in reading order');
    });

    it('finds a row of a Word table with its headings', async () => {
      const plans = [
        ['Plan', 'Support hours', 'Price per seat'],
        ['Bronze', '4 hours', 'EUR 9'],
        ['Silver', '8 hours', 'EUR 19'],
      ];
      const [source] = await upload([{ name: 'plans.docx', content: await docx(['Our plans', plans]) }], 'Plans');
      assert.equal((await indexed(source.id)).latest_version.status, 'ready');
      const [hit] = await search('support hours of the Silver plan', ['Plans'], 1);
      assert.deepEqual([hit.text, hit.paragraph], ['Plan: Silver; Support hours: 8 hours; Price per seat: EUR 19', 3]);
    });
  });

  describe('ranking', () => {
    it('finds the total of an invoice its header names by number, not the header', async () => {
      const invoice = [
        'Contoso Office Supplies GmbH, Industriestrasse 21, 70565 Stuttgart',
        'INVOICE Invoice no. 2291, invoice date 3 March 2026, due date 2 April 2026',
        'Standing desk, oak, 160 x 80 cm: 6 x 489.00 = 2,934.00',
        'Ergonomic office chair: 6 x 329.00 = 1,974.00',
        'Monitor arm, dual: 12 x 79.50 = 954.00',
        'Subtotal: 7,221.00',
        'VAT 19%: 1,371.99',
        'Total due (EUR): 8,592.99',
        'Payment terms: 30 days net, by bank transfer.',
      ].join('\n\n');
      const [source] = await upload([{ name: 'invoice-2291.md', content: invoice }], 'Invoices');
      assert.equal((await indexed(source.id)).latest_version.status, 'ready');
      // Only the header says "invoice 2291"; every passage carries it as its document's opening.
      const [hit] = await search('What is the total amount due on invoice 2291?', ['Invoices'], 1);
      assert.equal(hit.text, 'Total due (EUR): 8,592.99');
    });
  });

  describe('source names', () => {
    it('answers 422 naming the unknown sources of a search, and a close name it may be a typo of', async () => {
      const [source] = await upload([{ name: 'h.txt', content: 'Hotels are booked by the travel desk.' }], 'Handbook');
      await indexed(source.id);
      const res = await call('/v1/sources/search', {
        method: 'POST',
        json: { query: 'hotels', sources: ['Handbook', 'Handbok', 'no-such-source'] },
      });
      assert.equal(res.status, 422);
      assert.equal(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      const problem = await json(res);
      assert.equal(problem.code, 'unknown_sources');
      assert.deepEqual(problem.errors, [
        {
          path: 'sources[1]',
          message: 'no source named "Handbok" in this workspace (did you mean "Handbook"?)',
        },
        { path: 'sources[2]', message: 'no source named "no-such-source" in this workspace' },
      ]);
      assert.match(problem.detail, /"Handbok".*"no-such-source"/);
      assert.equal((await search('hotels', ['Handbook'])).length, 1);
    });

    it('warns when an agent is saved naming an unknown source, with the name it may be a typo of', async () => {
      const res = await call('/v1/agents', {
        method: 'POST',
        json: { name: 'travel answers', sources: ['handbook'], nodes: [{ kind: 'input', id: 'in' }] },
      });
      assert.equal(res.status, 201);
      const { warnings } = await json(res);
      assert.deepEqual(warnings, [
        'there is no source named "handbook" in this workspace yet (did you mean "Handbook"?); retrieval skips it until one is added',
      ]);
    });
  });
});
