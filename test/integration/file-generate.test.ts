// The file.generate tool: a step writes rows (or text) into a downloadable file of its run, once per item.
import assert from 'node:assert/strict';
import { runFileSaver } from '../../db/run-files';
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
import { checkedFetch } from '../support/openapi-check';

describe('file.generate', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  before(async () => {
    h = await createHarness();
    api = await startApi(h);
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  it('writes each item’s rows into a file of the run that the API serves', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'statements',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'write' },
        {
          kind: 'tool',
          id: 'write',
          tool: 'file.generate',
          arguments: { file_name: 'statement-{{customer}}', format: 'csv', rows: '{{lines}}' },
          save_as: 'file',
        },
      ],
    });
    const input = JSON.stringify([
      {
        customer: 'acme',
        lines: [
          { item: 'bolts', total: 12 },
          { item: 'nuts', total: 3 },
        ],
      },
      { customer: 'globex', lines: [{ item: 'gears', total: 40 }] },
    ]);
    const run = await waitForRun(h, (await startTestRun(h, workspace.id, agent.id, input)).id);
    assert.equal(run.status, 'completed');
    const files = await h.stack.knex('files').where({ run_id: run.id }).orderBy('name');
    assert.deepEqual(
      files.map((f) => f.name),
      ['statement-acme.csv', 'statement-globex.csv'],
    );
    const [first] = await items(h, run.id);
    assert.equal(first.data.file.name, 'statement-acme.csv');
    const res = await checkedFetch(`${api.url}/v1/runs/${run.id}/files/${first.data.file.file_id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(await res.text(), 'item,total\nbolts,12\nnuts,3\n');

    // A retried step that writes again keeps the one file.
    const save = runFileSaver(h.stack.knex, run.id, `${run.id}:0:write`);
    const again = await save({ name: 'statement-acme.csv', contentType: 'text/csv', content: Buffer.from('x') });
    assert.equal(again.file_id, first.data.file.file_id);
    assert.equal((await h.stack.knex('files').where({ run_id: run.id })).length, 2);
  });

  it('writes text as it is (a Markdown report, pretty JSON), and refuses text for xlsx or JSON that does not parse', async () => {
    const { workspace } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'reports',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'write' },
        {
          kind: 'tool',
          id: 'write',
          tool: 'file.generate',
          arguments: { file_name: '{{name}}', format: '{{format}}', text: '{{text}}' },
          save_as: 'file',
        },
      ],
    });
    const input = JSON.stringify([
      { name: 'summary', format: 'markdown', text: '# Acme\n\nTotal: **15**\n' },
      { name: 'totals.json', format: 'json', text: '{"acme":15}' },
      { name: 'book', format: 'xlsx', text: 'not rows' },
      { name: 'broken', format: 'json', text: '{"acme":' },
    ]);
    const run = await waitForRun(h, (await startTestRun(h, workspace.id, agent.id, input)).id);
    const rows = await items(h, run.id);
    assert.deepEqual(
      rows.map((r) => r.status),
      ['done', 'done', 'failed', 'failed'],
    );
    assert.match(rows[2].error, /an xlsx file is made from rows, not text/);
    assert.match(rows[3].error, /the text of a json file must be valid JSON/);
    const files = await h.stack.knex('files').where({ run_id: run.id }).orderBy('name');
    assert.deepEqual(
      files.map((f) => [f.name, f.content_type, f.content.toString()]),
      [
        ['summary.md', 'text/markdown; charset=utf-8', '# Acme\n\nTotal: **15**\n'],
        ['totals.json', 'application/json', '{\n  "acme": 15\n}'],
      ],
    );
    assert.equal(rows[0].data.file.size, Buffer.byteLength('# Acme\n\nTotal: **15**\n'));
  });
});
