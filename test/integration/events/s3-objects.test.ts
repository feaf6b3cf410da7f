// Event triggers on connected storage, against moto's S3 server (IAM checks on) through the AWS SDK: a file put under
// the connection's prefix starts one run, which downloads it into the run; files elsewhere in the bucket and files
// from before the trigger do not; a poll that reads the same objects again starts nothing twice.
import assert from 'node:assert/strict';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  items,
  startApi,
  waitForRun,
  type Harness,
} from '../../support/harness';
import { connectorApi, pollNow, type ConnectorApi, type Json } from '../../support/connections';
import { startMotoS3, type MotoS3 } from '../../support/moto';

describe('event triggers: files uploaded to connected storage (S3)', function () {
  this.timeout(300_000);
  const bucket = 'invoices';
  let moto: MotoS3;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let ws = '';

  const put = (key: string, body: string) =>
    moto.admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: 'text/csv' }));

  before(async () => {
    moto = await startMotoS3();
    await moto.createBucket(bucket);
    await put('inbound/old.csv', 'from before the trigger\n');
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    ws = t.workspace.id;
    c = connectorApi(h, api.url, t.key, ws);
    await c.connect(
      'files',
      's3',
      { bucket, endpoint: moto.endpoint, force_path_style: true, prefix: 'inbound' },
      { access_key_id: moto.accessKeyId, secret_access_key: moto.secretAccessKey },
    );
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await moto?.stop();
  });

  it('each file put under the prefix starts one run, which downloads it', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'Incoming files',
      connections: ['files'],
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'fetch' },
        {
          kind: 'tool',
          id: 'fetch',
          tool: 's3.download',
          arguments: { connection: 'files', key: '{{key}}' },
          save_as: 'file',
        },
      ],
    });
    const made = await c.call('POST', `/agents/${agent.id}/triggers`, {
      kind: 'event',
      connection: 'files',
      event: 'object.created',
      poll_interval_seconds: 3600, // polled by hand: the schedule's fire, now
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const trigger = made.body;
    assert.match(String(await pollNow(h, trigger)), /0 events/, 'what is there already is not new');
    const start = await h.stack.knex('trigger_cursors').where({ trigger_id: trigger.id }).first('cursor');

    await put('inbound/march.csv', 'invoice,total\nINV-3,300\n');
    await put('outside/other.csv', 'not under the prefix\n');
    assert.match(String(await pollNow(h, trigger)), /1 events, 1 runs started/);
    const runs = await h.stack.knex('runs').where({ agent_id: agent.id, trigger: 'event' });
    assert.equal(runs.length, 1);
    const done = await waitForRun(h, runs[0].id);
    assert.equal(done.status, 'completed');
    const [item] = await items(h, runs[0].id);
    assert.equal((item.data as Json).key, 'march.csv');
    const files = await h.stack.knex('files').where({ run_id: runs[0].id });
    assert.deepEqual(
      files.map((f) => [f.name, Buffer.from(f.content).toString()]),
      [['march.csv', 'invoice,total\nINV-3,300\n']],
    );

    // A poll that failed after starting the run but before recording how far it read: the next one reads the file
    // again, and does not start it twice.
    await h.stack.knex('trigger_cursors').where({ trigger_id: trigger.id }).update({ cursor: start.cursor });
    assert.match(String(await pollNow(h, trigger)), /1 events, 0 runs started/);
    assert.equal((await h.stack.knex('runs').where({ agent_id: agent.id, trigger: 'event' })).length, 1);
  });
});
