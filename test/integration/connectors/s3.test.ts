// The S3 storage connector against moto's S3 server with IAM authentication on, through the official AWS SDK: a
// connection sees one prefix of one bucket, lists and downloads into runs, uploads a run's files only when allowed
// and approved (and once however often its step runs), and reports new objects to event triggers.
import assert from 'node:assert/strict';
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  PutBucketVersioningCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { connectorImplementations } from '../../../activities/connectors';
import type { OpenedConnection } from '../../../activities/connectors/connector';
import type { ToolContext } from '../../../activities/tools/tool-context';
import { s3ConfigSchema } from '../../../model/connectors/s3';
import { createHarness, createTestWorkspace, items, startApi, waitForRun, type Harness } from '../../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';
import { startMotoS3, type MotoS3 } from '../../support/moto';

describe('connectors: S3 storage', function () {
  this.timeout(180_000);
  let moto: MotoS3;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  const bucket = 'acme-files';

  const put = (key: string, body: string | Buffer, b = bucket) =>
    moto.admin.send(new PutObjectCommand({ Bucket: b, Key: key, Body: body, ContentType: 'text/plain' }));
  const read = async (key: string, b = bucket) =>
    (await moto.admin.send(new GetObjectCommand({ Bucket: b, Key: key })).then(
      (o) => o.Body!.transformToString(),
      () => undefined,
    )) as string | undefined;
  const keysIn = async (prefix = '') =>
    ((await moto.admin.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }))).Contents ?? []).map(
      (o) => o.Key,
    );

  const config = (over: Json = {}) => ({
    bucket,
    endpoint: moto.endpoint,
    force_path_style: true,
    prefix: 'inbound',
    ...over,
  });
  const credentials = () => ({ access_key_id: moto.accessKeyId, secret_access_key: moto.secretAccessKey });

  before(async () => {
    moto = await startMotoS3();
    await moto.createBucket(bucket);
    await put('inbound/a.txt', 'hello from a');
    await put('inbound/2024/b.csv', 'id,total\n1,10\n');
    await put('outside/secret.txt', 'not for agents');
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    c = connectorApi(h, api.url, t.key, t.workspace.id);
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await moto?.stop();
  });

  /** Runs one tool node on each input item and answers the items once the run ended (or waits for a reviewer). */
  const toolAgent = (tool: string, args: Json, extra: Json[] = []) => ({
    name: `s3 ${tool}`,
    connections: ['files'],
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: extra.length ? extra[0].id : 'call' },
      ...extra.map((n) => ({ ...n, next: 'call' })),
      { kind: 'tool', id: 'call', tool, arguments: { connection: 'files', ...args }, save_as: 'out' },
    ],
  });
  async function runTool(tool: string, args: Json, input: unknown[] = [{}]) {
    const { started } = await c.runOf(toolAgent(tool, args), input);
    await waitForRun(h, started.id);
    return { runId: started.id as string, rows: await items(h, started.id) };
  }
  const connectionId = async (name: string) =>
    (await c.call('GET', '/connections')).body.data.find((x: Json) => x.name === name).id;

  it('refuses a wrong secret, a missing bucket and an internal address with messages a person can act on', async () => {
    const wrong = await c.call('POST', '/connections', {
      name: 'wrong',
      kind: 's3',
      config: config(),
      credentials: { ...credentials(), secret_access_key: 'not-the-secret-0000' },
    });
    assert.equal(wrong.status, 422, JSON.stringify(wrong.body));
    assert.match(wrong.body.detail, /S3 refused its credentials \(403 SignatureDoesNotMatch\): check the access key/);
    assert.doesNotMatch(JSON.stringify(wrong.body), /not-the-secret/);

    const missing = await c.call('POST', '/connections', {
      name: 'missing',
      kind: 's3',
      config: config({ bucket: 'no-such-bucket' }),
      credentials: credentials(),
    });
    assert.equal(missing.status, 422);
    assert.match(missing.body.detail, /the bucket "no-such-bucket" does not exist/);

    const internal = await c.call('POST', '/connections', {
      name: 'internal',
      kind: 's3',
      config: config({ endpoint: moto.endpoint.replace('127.0.0.1', '127.0.0.2') }),
      credentials: credentials(),
    });
    assert.equal(internal.status, 422);
    assert.match(internal.body.detail, /private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/);

    const climbing = await c.call('POST', '/connections', {
      name: 'climbing',
      kind: 's3',
      config: config({ prefix: 'inbound/../outside' }),
      credentials: credentials(),
    });
    assert.equal(climbing.status, 422);
  });

  it('connects one prefix read-only, says what it found, and keeps the secret sealed', async () => {
    const made = await c.connect('files', 's3', config({ prefix: '/inbound' }), credentials());
    assert.equal(made.config.prefix, 'inbound/', 'stored as a folder');
    assert.equal(made.config.allow_writes, false);
    assert.deepEqual(made.can, ['list', 'download']);
    const tested = await c.call('POST', `/connections/${made.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.match(tested.body.server_version, /^S3-compatible storage at 127\.0\.0\.1:\d+$/);
    assert.deepEqual(tested.body.found.sort(), ['2024/b.csv', 'a.txt']);

    const shown = await c.call('GET', `/connections/${made.id}`);
    // The secret as a string, not a pattern: a base64 secret may hold '+' or '/'.
    assert.ok(
      !JSON.stringify([made, tested.body, shown.body]).includes(moto.secretAccessKey),
      'the secret is never shown',
    );
    const row = await h.stack.knex('connections').where({ id: made.id }).first();
    assert.ok(!JSON.stringify(row).includes(moto.secretAccessKey), 'sealed at rest');

    const connectors = await c.call('GET', '/connectors');
    const s3 = connectors.body.data.find((k: Json) => k.kind === 's3');
    assert.deepEqual(
      s3.tools.map((t: Json) => [t.name, t.approval_default]),
      [
        ['s3.list', 'never'],
        ['s3.download', 'never'],
        ['s3.upload', 'always'],
      ],
    );
    assert.deepEqual(
      s3.events.map((e: Json) => e.name),
      ['object.created'],
    );
  });

  it('lists only under its prefix, by folder and page by page', async () => {
    const all = await runTool('s3.list', {});
    assert.equal(all.rows[0].status, 'done', all.rows[0].error);
    assert.deepEqual(
      all.rows[0].data.out.objects.map((o: Json) => [o.key, o.size]),
      [
        ['2024/b.csv', 14],
        ['a.txt', 12],
      ],
    );
    const folder = await runTool('s3.list', { recursive: false });
    assert.deepEqual(folder.rows[0].data.out.folders, ['2024/']);
    assert.deepEqual(
      folder.rows[0].data.out.objects.map((o: Json) => o.key),
      ['a.txt'],
    );

    const first = await runTool('s3.list', { limit: 1 });
    const token = first.rows[0].data.out.next_token;
    assert.ok(token, 'a next page');
    const second = await runTool('s3.list', { limit: 1, next_token: token });
    assert.deepEqual(
      [...first.rows[0].data.out.objects, ...second.rows[0].data.out.objects].map((o: Json) => o.key),
      ['2024/b.csv', 'a.txt'],
    );
    assert.equal(second.rows[0].data.out.next_token, null);

    const climb = await runTool('s3.list', { prefix: '../outside/' });
    assert.equal(climb.rows[0].status, 'failed');
    assert.match(climb.rows[0].error, /a key cannot contain/);
  });

  it("downloads objects as the run's files, never one outside its prefix or over its size limit", async () => {
    const { runId, rows } = await runTool('s3.download', { key: '{{key}}' }, [
      { key: 'a.txt' },
      { key: '2024/b.csv' },
      { key: '../outside/secret.txt' },
      { key: '/outside/secret.txt' },
      { key: 'nothing-here.txt' },
    ]);
    assert.deepEqual(
      rows.map((r) => r.status),
      ['done', 'done', 'failed', 'failed', 'failed'],
    );
    const files = await h.stack.knex('files').where({ run_id: runId }).orderBy('name');
    assert.deepEqual(
      files.map((f) => [f.name, Buffer.from(f.content).toString()]),
      [
        ['a.txt', 'hello from a'],
        ['b.csv', 'id,total\n1,10\n'],
      ],
    );
    assert.equal(rows[0].data.out.file_id, files.find((f) => f.name === 'a.txt').id);
    assert.match(rows[2].error, /a key cannot contain/);
    assert.match(rows[3].error, /a key is relative to the connection's prefix/);
    assert.match(
      rows[4].error,
      /could not download s3:\/\/acme-files\/inbound\/nothing-here.txt: there is no such object/,
    );

    await put('inbound/big.bin', Buffer.alloc(1024 * 1024 + 10, 1));
    const patched = await c.call('PATCH', `/connections/${await connectionId('files')}`, {
      config: { max_file_mb: 1 },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const big = await runTool('s3.download', { key: 'big.bin' });
    assert.equal(big.rows[0].status, 'failed');
    assert.match(big.rows[0].error, /is 1\.0 MB; connection "files" downloads at most 1 MB \(max_file_mb\)/);
    assert.equal((await h.stack.knex('files').where({ run_id: big.runId })).length, 0);
  });

  describe('uploads', () => {
    const reportThenUpload = (key: string) =>
      toolAgent('s3.upload', { file: '{{report.file_id}}', key }, [
        {
          kind: 'tool',
          id: 'report',
          tool: 'file.generate',
          arguments: { file_name: 'report-{{n}}.csv', rows: [{ n: '{{n}}', status: 'ok' }] },
          save_as: 'report',
        },
      ]);

    it('a read-only connection offers no upload and refuses one', async () => {
      const { started } = await c.runOf(reportThenUpload('out/'), [{ n: 1 }]);
      const pending = await c.waitForApproval(started.id);
      await c.decide(pending.id, 'approve');
      await waitForRun(h, started.id);
      const [row] = await items(h, started.id);
      assert.equal(row.status, 'failed');
      assert.match(
        row.error,
        /connection "files" is read-only: an admin can allow uploads in Integrations \(allow_writes\)/,
      );
      assert.deepEqual(await keysIn('inbound/out/'), []);
    });

    it("with writes allowed, a run's file goes up only once a reviewer approves, and not when rejected", async () => {
      const patched = await c.call('PATCH', `/connections/${await connectionId('files')}`, {
        config: { allow_writes: true, max_file_mb: 25 },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.deepEqual(patched.body.can, ['list', 'download', 'upload (asks approval)']);

      const { started } = await c.runOf(reportThenUpload('out/'), [{ n: 7 }]);
      const pending = await c.waitForApproval(started.id);
      assert.equal(pending.tool, 's3.upload');
      assert.equal(pending.arguments.key, 'out/');
      assert.deepEqual(await keysIn('inbound/out/'), [], 'nothing before approval');
      await c.decide(pending.id, 'approve');
      await waitForRun(h, started.id);
      const [row] = await items(h, started.id);
      assert.equal(row.status, 'done', row.error);
      assert.equal(row.data.out.key, 'out/report-7.csv');
      assert.equal(await read('inbound/out/report-7.csv'), 'n,status\n7,ok\n');

      const { started: rejected } = await c.runOf(reportThenUpload('out/'), [{ n: 8 }]);
      await c.decide((await c.waitForApproval(rejected.id)).id, 'reject');
      await waitForRun(h, rejected.id);
      assert.deepEqual(await keysIn('inbound/out/'), ['inbound/out/report-7.csv']);

      const { started: again } = await c.runOf(reportThenUpload('out/report-7.csv'), [{ n: 9 }]);
      await c.decide((await c.waitForApproval(again.id)).id, 'approve');
      await waitForRun(h, again.id);
      const [refused] = await items(h, again.id);
      assert.equal(refused.status, 'failed');
      assert.match(refused.error, /s3:\/\/acme-files\/inbound\/out\/report-7.csv exists already: set overwrite/);
      assert.equal(await read('inbound/out/report-7.csv'), 'n,status\n7,ok\n', 'not replaced');
    });

    it('a retried upload step puts its object once, even in a versioned bucket', async () => {
      await moto.createBucket('acme-versioned');
      await moto.admin.send(
        new PutBucketVersioningCommand({ Bucket: 'acme-versioned', VersioningConfiguration: { Status: 'Enabled' } }),
      );
      const opened = openedConnection({ bucket: 'acme-versioned', prefix: 'out', allow_writes: true });
      const upload = connectorImplementations.s3.handlers['s3.upload'];
      const file = { id: '00000000-0000-4000-a000-000000000001', name: 'r.txt', contentType: 'text/plain' };
      const ctx = (key: string, text: string): ToolContext => ({
        idempotencyKey: key,
        http: { allowHosts: ['127.0.0.1'] },
        smtp: { from: 'x@example.com' },
        readFile: async () => ({ ...file, content: Buffer.from(text) }),
      });
      const input = { connection: 'direct', file: 'r.txt', key: 'r.txt', overwrite: false };
      const first = (await upload(input, opened, ctx('run:1:up', 'first'))) as Json;
      const retried = (await upload(input, opened, ctx('run:1:up', 'first'))) as Json;
      assert.equal(retried.etag, first.etag);
      const versions = async () =>
        (await moto.admin.send(new ListObjectVersionsCommand({ Bucket: 'acme-versioned' }))).Versions ?? [];
      assert.equal((await versions()).length, 1, 'the retry put nothing');

      await assert.rejects(upload(input, opened, ctx('run:2:up', 'second')), /exists already: set overwrite/);
      await upload({ ...input, overwrite: true }, opened, ctx('run:3:up', 'third'));
      assert.equal((await versions()).length, 2, 'another step with overwrite replaces it');
      assert.equal(await read('out/r.txt', 'acme-versioned'), 'third');
    });
  });

  function openedConnection(over: Json): OpenedConnection {
    return {
      name: 'direct',
      kind: 's3',
      config: s3ConfigSchema.parse(config(over)),
      credentials: credentials(),
      version: `test:${JSON.stringify(over)}`,
      limits: { allowHosts: ['127.0.0.1'] },
    };
  }

  it('reports objects created under its prefix once each, from the cursor on', async () => {
    await moto.createBucket('acme-watched');
    const watched = openedConnection({ bucket: 'acme-watched', prefix: 'drop' });
    const poll = connectorImplementations.s3.pollers!['object.created'];
    const putWatched = (key: string, body: string) => put(key, body, 'acme-watched');

    await putWatched('drop/old.txt', 'before the trigger');
    const start = await poll(watched, undefined);
    assert.deepEqual(start.events, [], 'what was there before is not news');

    await putWatched('drop/new-1.txt', 'one');
    await putWatched('drop/sub/new-2.txt', 'two');
    await putWatched('elsewhere/ignored.txt', 'not under the prefix');
    const batch = await poll(watched, start.cursor);
    assert.deepEqual(batch.events.map((e) => e.data.key).sort(), ['new-1.txt', 'sub/new-2.txt']);
    assert.deepEqual(batch.events[0].data.bucket, 'acme-watched');
    assert.equal(new Set(batch.events.map((e) => e.id)).size, 2);

    const quiet = await poll(watched, batch.cursor);
    assert.deepEqual(quiet.events, [], 'nothing new');

    // S3's clock counts whole seconds: a new version must get a later LastModified than the first.
    await new Promise((r) => setTimeout(r, 1100));
    await putWatched('drop/new-1.txt', 'one, again');
    const again = await poll(watched, quiet.cursor);
    assert.deepEqual(
      again.events.map((e) => e.data.key),
      ['new-1.txt'],
      'a new version is news',
    );
    assert.notEqual(again.events[0].id, batch.events.find((e) => e.data.key === 'new-1.txt')!.id);
  });
});
