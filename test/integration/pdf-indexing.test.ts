// PDFs indexed together through the real pipeline (API upload, the indexing workflow on Temporal, Postgres):
// documents open at the same time in one worker must not disturb each other, and none is left with an error.
import assert from 'node:assert/strict';
import { createHarness, createTestWorkspace, startApi, type Harness } from '../support/harness';
import { checkedFetch } from '../support/openapi-check';
import { textPdf } from '../support/source-samples';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = any;

describe('PDFs indexed in parallel', function () {
  this.timeout(300_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;

  before(async () => {
    h = await createHarness();
    api = await startApi(h);
    key = (await createTestWorkspace(h)).key;
  });
  after(async () => {
    await api?.close();
    await h?.close();
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

  async function indexed(sourceId: string): Promise<Json> {
    const deadline = Date.now() + 240_000;
    for (;;) {
      const source: Json = await (await call(`/v1/sources/${sourceId}`)).json();
      if (source.latest_version && source.latest_version.status !== 'indexing') return source;
      if (Date.now() > deadline) throw new Error(`source still indexing: ${JSON.stringify(source.latest_version)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it('indexes PDFs of different lengths uploaded together, each fully and with no error left behind', async () => {
    // Documents of different page counts: with pdf.js 5.4 a short document opened while a long one was being
    // read made the long one's later pages "Invalid page request".
    const lengths = [14, 1, 9, 2, 12, 3];
    const form = new FormData();
    for (const [i, pages] of lengths.entries()) {
      const pdf = await textPdf(
        Array.from({ length: pages }, (_, p) => [
          [`Manual ${i + 1}, page ${p + 1}: the code word is m${i + 1}p${p + 1}.`],
        ]),
      );
      form.append('files', new Blob([Buffer.from(pdf.bytes)]), `manual-${i + 1}.pdf`);
    }
    const res = await call('/v1/sources', { method: 'POST', body: form });
    assert.equal(res.status, 202);
    const sources: Json[] = ((await res.json()) as Json).data;
    assert.equal(sources.length, lengths.length);

    for (const [i, source] of sources.entries()) {
      const done = await indexed(source.id);
      const version = done.latest_version;
      assert.equal(version.status, 'ready', JSON.stringify(version));
      assert.equal(version.error, null);
      assert.deepEqual(version.progress, { pages_done: lengths[i], pages_total: lengths[i] });
      assert.deepEqual(
        version.documents.map((d: Json) => [d.file_name, d.status, d.error, d.pages_done]),
        [[`manual-${i + 1}.pdf`, 'done', null, lengths[i]]],
      );
    }
    // Not one range needed a second attempt: retries no longer hide documents disturbing each other.
    for (const source of sources) {
      const { workflow_id } = await h.stack
        .knex('source_versions')
        .where({ source_id: source.id })
        .first('workflow_id');
      const history = await h.client.workflow.getHandle(workflow_id).fetchHistory();
      const attempts = (history.events ?? []).flatMap((e) =>
        e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 1] : [],
      );
      assert.ok(attempts.length > 0 && attempts.every((a) => a === 1), `${source.name}: attempts ${attempts}`);
    }
    // The last page of each document was read: its own code word is found.
    for (const [i, pages] of lengths.entries()) {
      const search = await call('/v1/sources/search', {
        method: 'POST',
        json: { query: `code word m${i + 1}p${pages}`, sources: [`manual-${i + 1}.pdf`], top_k: 1 },
      });
      const [hit] = ((await search.json()) as Json).data;
      assert.equal(hit?.page, pages, `manual-${i + 1}.pdf`);
    }
  });
});
