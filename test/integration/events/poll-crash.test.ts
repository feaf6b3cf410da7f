// An event trigger's poll killed halfway: the worker running it is SIGKILLed after the poll has opened some of its
// runs and before it recorded how far it read (the cursor). The rows change before the poll is tried again on another
// worker, which reads them again: every new row of the table ends as exactly one completed run, none lost, none
// doubled, and the runs the killed poll opened start with the rows as they read them (an event's run is named by the
// event alone, not by what its row holds).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { scheduleIdOf } from '../../../schedules/sync';
import { connectorApi, pollNow, type ConnectorApi, type Json } from '../../support/connections';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  spawnWorker,
  startApi,
  waitForRun,
  type Harness,
} from '../../support/harness';
import { startPostgresServer, type DatabaseServer } from '../../support/servers';

const rows = 150; // a poll reads 100 at most: the killed poll, then one more for the rest

describe('event triggers: a poll killed between opening runs and recording its cursor', function () {
  this.timeout(300_000);
  let db: DatabaseServer;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let ws = '';
  const workers: ChildProcess[] = [];
  // The spawned workers read their configuration from the environment, as in production.
  const startWorker = () => {
    const w = spawnWorker(h, { CADRE_HTTP_ALLOW_HOSTS: '127.0.0.1' });
    workers.push(w);
    return w;
  };

  before(async () => {
    db = await startPostgresServer();
    await db.admin.schema.createTable('orders', (t) => {
      t.increments('id');
      t.integer('n').notNullable();
    });
    await db.admin.raw('grant all on orders, orders_id_seq to app');
    h = await createHarness({ worker: false, config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    ws = t.workspace.id;
    c = connectorApi(h, api.url, t.key, ws);
    await c.connect(
      'shop',
      'postgres',
      { host: db.host, port: db.port, database: db.database, user: db.user },
      { password: db.password },
    );
  });
  after(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await api?.close();
    await h?.close();
    await db?.stop();
  });

  it('starts every new row once although the worker died inside the poll', async () => {
    const agent = await createLiveAgent(h, ws, {
      name: 'orders counted',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'count' },
        { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'orders' } },
      ],
    });
    const made = await c.call('POST', `/agents/${agent.id}/triggers`, {
      kind: 'event',
      connection: 'shop',
      event: 'row.created',
      options: { table: 'orders', column: 'id' },
      poll_interval_seconds: 3600, // fired by hand below
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const trigger = made.body as Json;
    const first = startWorker();
    assert.match(String(await pollNow(h, trigger)), /0 events/, 'the first poll marks where new rows begin');
    const cursorOf = async () =>
      (await h.stack.knex('trigger_cursors').where({ trigger_id: trigger.id }).first('cursor')).cursor as string;
    const start = await cursorOf();

    await db.admin('orders').insert(Array.from({ length: rows }, (_, n) => ({ n })));
    const runsOf = () => h.stack.knex('runs').where({ agent_id: agent.id, trigger: 'event' });
    await h.client.schedule.getHandle(scheduleIdOf(trigger as { id: string; agent_id: string })).trigger();
    let opened = 0;
    for (let i = 0; i < 3000 && opened < 5; i++) {
      opened = (await runsOf()).length;
      if (opened < 5) await new Promise((r) => setTimeout(r, 10));
    }
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const openedAtKill = (await runsOf()).length;
    assert.ok(openedAtKill >= 5 && openedAtKill < 100, `killed halfway through the poll (${openedAtKill} runs opened)`);
    assert.equal(await cursorOf(), start, 'the killed poll had not recorded how far it read');
    // The rows change before the retry reads them: the runs already opened keep the rows as they were read.
    await db.admin('orders').update({ n: db.admin.raw('n + 1000') });

    startWorker(); // the poll is tried again here once its heartbeat is missed
    const ended = async (count: number) => {
      for (let i = 0; i < 1200; i++) {
        const runs = await runsOf();
        if (runs.length >= count && runs.every((r) => !['queued', 'running'].includes(r.status))) return runs;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`the runs did not all end: ${JSON.stringify(await runsOf())}`);
    };
    await ended(100);
    assert.notEqual(await cursorOf(), start, 'the retried poll recorded how far it read');
    assert.match(String(await pollNow(h, trigger)), /50 events, 50 runs started/);
    const runs = await ended(rows);

    assert.equal(runs.length, rows, 'one run per row');
    for (const run of runs) assert.equal((await waitForRun(h, run.id)).status, 'completed');
    const seen = runs.map((r) => (JSON.parse(r.input) as Json[])[0].id as number).sort((a, b) => a - b);
    assert.deepEqual(
      seen,
      Array.from({ length: rows }, (_, i) => i + 1),
      'each row in exactly one run',
    );
    const inputs = runs.map((r) => (JSON.parse(r.input) as Json[])[0].n as number);
    assert.ok(
      inputs.filter((n) => n < 1000).length >= openedAtKill,
      'the runs opened before the kill kept the rows as that poll read them',
    );
    const counted = await c.call('GET', `/agents/${agent.id}/state-store/orders`);
    assert.equal(counted.body.value, rows, 'each run acted once');
  });
});
