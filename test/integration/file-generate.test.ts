// The file.generate tool: a step writes rows into a downloadable file of its run, once per item.
import assert from 'node:assert/strict';
import { runFileSaver } from '../../activities/run-files';
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
});
