// The remote embedding provider: with CADRE_EMBEDDINGS=voyage, indexing and search embed through Voyage AI's
// HTTP API. A local fake speaks Voyage's wire format over real HTTP (VOYAGE_BASE_URL points at it); its vectors
// come from a small table of word meanings, so a question sharing no word with a passage can only find it by
// vector search through the provider.
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = any;
const json = (res: Response): Promise<Json> => res.json();

const meanings: Record<string, string> = {
  engineers: 'engineer',
  developers: 'engineer',
  hire: 'hire',
  recruit: 'hire',
  cafeteria: 'food',
  canteen: 'food',
  lunch: 'food',
  menu: 'food',
  parking: 'car',
};

/** A unit vector of 1024 dimensions with one axis per meaning found in the text. */
function embed(text: string): number[] {
  const v = new Array<number>(1024).fill(0);
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    const meaning = meanings[word];
    if (meaning) v[[...meaning].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 1024, 7)] += 1;
  }
  v[1023] += 0.01; // never the zero vector
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

describe('Voyage AI embeddings (CADRE_EMBEDDINGS=voyage)', function () {
  this.timeout(180_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let voyage: http.Server;
  const requests: { authorization?: string; body: Json }[] = [];
  const saved = { ...process.env };

  before(async () => {
    voyage = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw);
        requests.push({ authorization: req.headers.authorization, body });
        if (req.method !== 'POST' || req.url !== '/v1/embeddings') return res.writeHead(404).end();
        if (req.headers.authorization !== 'Bearer pa-test-key')
          return res
            .writeHead(401, { 'content-type': 'application/json' })
            .end(JSON.stringify({ detail: 'Provided API key is invalid.' }));
        const data = (body.input as string[]).map((t, index) => ({ object: 'embedding', embedding: embed(t), index }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            object: 'list',
            data: data.reverse(), // the order of `data` is not the order of `input`: `index` is
            model: body.model,
            usage: { total_tokens: 10 },
          }),
        );
      });
    });
    await new Promise<void>((r) => voyage.listen(0, '127.0.0.1', r));
    Object.assign(process.env, {
      CADRE_EMBEDDINGS: 'voyage',
      VOYAGE_API_KEY: 'pa-test-key',
      VOYAGE_MODEL: 'voyage-3.5-lite',
      VOYAGE_BASE_URL: `http://127.0.0.1:${(voyage.address() as { port: number }).port}/v1`,
    });
    h = await createHarness();
    api = await startApi(h);
    key = (await createTestWorkspace(h)).key;
  });
  after(async () => {
    for (const k of ['CADRE_EMBEDDINGS', 'VOYAGE_API_KEY', 'VOYAGE_MODEL', 'VOYAGE_BASE_URL']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await api?.close();
    await h?.close();
    await new Promise((r) => voyage?.close(r));
  });

  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${api.url}${path}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } });

  it('embeds passages as documents and questions as queries, and finds a passage sharing no word with it', async () => {
    const form = new FormData();
    form.append('name', 'Plans');
    const plans = [
      'We plan to recruit nine software developers in May.',
      'The cafeteria reopens on Monday with a new menu.',
      'Parking permits are renewed every January.',
    ];
    form.append('files', new Blob([plans.join('\n\n')]), 'plans.txt');
    const [source] = (await json(await call('/v1/sources', { method: 'POST', body: form }))).data;
    for (;;) {
      const s = await json(await call(`/v1/sources/${source.id}`));
      if (s.latest_version.status !== 'indexing') {
        assert.equal(s.latest_version.status, 'ready', s.latest_version.error);
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const indexing = requests.find((r) => r.body.input_type === 'document');
    assert.ok(indexing, 'passages were embedded through Voyage');
    assert.equal(indexing.authorization, 'Bearer pa-test-key');
    assert.deepEqual(
      { ...indexing.body, input: [...indexing.body.input].sort() },
      { input: [...plans].sort(), model: 'voyage-3.5-lite', input_type: 'document', output_dimension: 1024 },
    );
    const stored = await h.stack
      .knex('passages')
      .where({ source_id: source.id })
      .select(
        h.stack.knex.raw('embedding_voyage is not null as voyage'),
        h.stack.knex.raw('embedding is null as local'),
      );
    assert.deepEqual(
      stored.map((r) => [r.voyage, r.local]),
      plans.map(() => [true, true]),
      'Voyage vectors in their own column, no local ones',
    );

    const res = await call('/v1/sources/search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'how many engineers will we hire?', sources: ['Plans'], top_k: 1 }),
    });
    assert.equal(res.status, 200);
    const [hit] = (await json(res)).data;
    assert.equal(hit?.text, plans[0]);
    assert.deepEqual(requests.at(-1)!.body, {
      input: ['how many engineers will we hire?'],
      model: 'voyage-3.5-lite',
      input_type: 'query',
      output_dimension: 1024,
    });
  });

  it('answers a clear problem when Voyage refuses the key', async () => {
    process.env.VOYAGE_API_KEY = 'pa-wrong';
    try {
      const res = await call('/v1/sources/search', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'parking', sources: ['Plans'] }),
      });
      assert.equal(res.status, 502);
      assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
      assert.match((await json(res)).detail, /Voyage AI embeddings failed \(HTTP 401\): Provided API key is invalid\./);
    } finally {
      process.env.VOYAGE_API_KEY = 'pa-test-key';
    }
  });
});
