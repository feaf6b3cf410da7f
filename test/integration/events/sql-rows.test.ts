// Event triggers against a real PostgreSQL (Debian's): a trigger on new rows of a table polls through a Temporal
// Schedule, each new row starts one run with the row as its item, rows from before the trigger do not, a poll that
// reads the same rows again (a crash between opening the runs and recording the cursor) starts nothing twice,
// filters and batches apply, a paused agent's poller is paused and what arrived meanwhile is skipped (or delivered
// when the trigger says so), and a failing poll is told once on the timeline. Also the races: a row whose transaction
// commits after a later row was read still starts its run; a pause that comes while a poll is opening runs leaves the
// rest of its rows for after the resume; and `skip_missed` starts from the resume itself, not from the next poll.
import assert from 'node:assert/strict';
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
import { startMariaDb, startPostgresServer, type DatabaseServer } from '../../support/servers';
import { scheduleIdOf } from '../../../schedules/sync';

const servers = { postgres: startPostgresServer, mysql: startMariaDb } as const;

for (const kind of ['postgres', 'mysql'] as const)
  describe(`event triggers: new rows of a SQL table (${kind === 'postgres' ? 'PostgreSQL' : 'MariaDB'})`, function () {
    this.timeout(300_000);
    let h: Harness;
    let api: Awaited<ReturnType<typeof startApi>>;
    let db: DatabaseServer;
    let c: ConnectorApi;
    let ws = '';

    before(async () => {
      db = await servers[kind]();
      h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
      api = await startApi(h);
      const t = await createTestWorkspace(h);
      ws = t.workspace.id;
      c = connectorApi(h, api.url, t.key, ws);
      await db.admin.schema.createTable('orders', (t) => {
        t.increments('id');
        t.string('customer').notNullable();
        t.integer('total').notNullable();
      });
      if (kind === 'postgres') await db.admin.raw('grant all on orders, orders_id_seq to app');
      await db.admin('orders').insert({ customer: 'before the trigger', total: 1 });
      await c.connect(
        'shop',
        kind,
        { host: db.host, port: db.port, database: db.database, user: db.user },
        {
          password: db.password,
        },
      );
    });
    after(async () => {
      await api?.close();
      await h?.close();
      await db?.stop();
    });

    const newAgent = (name: string) =>
      createLiveAgent(h, ws, { name, nodes: [{ kind: 'input', id: 'in', format: 'json', next: null }] });
    async function addTrigger(agentId: string, body: Json) {
      const made = await c.call('POST', `/agents/${agentId}/triggers`, {
        kind: 'event',
        connection: 'shop',
        event: 'row.created',
        options: { table: 'orders', column: 'id' },
        poll_interval_seconds: 3600, // the test polls by hand: the schedule's fire, now
        ...body,
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      return made.body;
    }
    const poll = (trigger: Json) => pollNow(h, trigger);
    const runsOf = (agentId: string) =>
      h.stack.knex('runs').where({ agent_id: agentId, trigger: 'event' }).orderBy('created_at');
    /** The items of the agent's event runs, once each run has ended. */
    async function itemsOfRuns(agentId: string): Promise<Json[][]> {
      const runs = await runsOf(agentId);
      return Promise.all(
        runs.map(async (r) => {
          await waitForRun(h, r.id);
          return (await items(h, r.id)).map((i) => i.data as Json);
        }),
      );
    }
    const insert = async (...rows: { customer: string; total: number }[]) => {
      await db.admin('orders').insert(rows);
    };

    it('is checked when saved: the connection, its events and their options', async () => {
      const agent = await newAgent('checks');
      const bad = async (body: Json, code: string, detail: RegExp) => {
        const res = await c.call('POST', `/agents/${agent.id}/triggers`, {
          kind: 'event',
          connection: 'shop',
          event: 'row.created',
          options: { table: 'orders', column: 'id' },
          ...body,
        });
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.equal(res.body.code, code);
        assert.match(res.body.detail, detail);
      };
      await bad({ connection: 'nowhere' }, 'unknown_connection', /no connection "nowhere": connect it in Integrations/);
      await bad({ event: 'email.received' }, 'unknown_event', /has no event "email.received"; it offers row\.created/);
      await bad({ options: { table: 'orders; drop table orders', column: 'id' } }, 'invalid_event_options', /table/);
      const connection = (await c.call('GET', '/connections')).body.data.find((x: Json) => x.name === 'shop');
      assert.deepEqual(
        connection.events.map((e: Json) => [e.name, e.options_schema.required]),
        [['row.created', ['table', 'column']]],
      );
    });

    it('each new row starts one run with the row as its item; rows from before it do not', async () => {
      const agent = await newAgent('new orders');
      const trigger = await addTrigger(agent.id, {});
      assert.equal(trigger.event.paused, false);
      assert.match(trigger.event.description, /polls shop for row\.created/);
      {
        const first = await poll(trigger);
        assert.match(
          String(first),
          /0 events/,
          `the first poll marks where it starts: ${String(first)} ${(first as Error).cause}`,
        );
      }
      await insert({ customer: 'acme', total: 120 }, { customer: 'globex', total: 15 });
      assert.match(String(await poll(trigger)), /2 events, 2 runs started/);
      const items = await itemsOfRuns(agent.id);
      assert.deepEqual(
        items.map((run) => run.map((i) => [i.customer, i.total])),
        [[['acme', 120]], [['globex', 15]]],
      );
      assert.match(String(await poll(trigger)), /0 events/, 'nothing new');

      // A crash between opening the runs and recording the cursor: the next poll reads the same rows again.
      await h.stack
        .knex('trigger_cursors')
        .where({ trigger_id: trigger.id })
        .update({ cursor: JSON.stringify(1) });
      assert.match(String(await poll(trigger)), /2 events, 0 runs started/);
      assert.equal((await runsOf(agent.id)).length, 2, 'no run twice');
      const timeline = (await c.call('GET', `/agents/${agent.id}/timeline`)).body.data as Json[];
      assert.equal(timeline.filter((e) => e.kind === 'trigger_fired').length, 2);
    });

    it('a filter lets through only the rows that match; the others are told on the timeline', async () => {
      const agent = await newAgent('big orders');
      const trigger = await addTrigger(agent.id, { filter: { field: 'total', op: 'gt', value: 100 } });
      await poll(trigger);
      await insert({ customer: 'small', total: 5 }, { customer: 'big', total: 500 });
      await poll(trigger);
      const items = await itemsOfRuns(agent.id);
      assert.deepEqual(
        items.map((run) => run.map((i) => i.customer)),
        [['big']],
      );
      const skipped = (await c.call('GET', `/agents/${agent.id}/timeline?kind=trigger_skipped`)).body.data as Json[];
      assert.equal(skipped.length, 1);
      assert.match(skipped[0].message, /skipped \(filtered out/);
    });

    it('batches the rows of a window into one run of many items', async () => {
      const agent = await newAgent('batched orders');
      const trigger = await addTrigger(agent.id, { batch: { max_wait_ms: 60_000, max_items: 3 } });
      await poll(trigger);
      await insert({ customer: 'a', total: 1 }, { customer: 'b', total: 2 }, { customer: 'c', total: 3 });
      await poll(trigger);
      for (let i = 0; i < 300 && (await runsOf(agent.id)).length === 0; i++)
        await new Promise((r) => setTimeout(r, 100));
      const items = await itemsOfRuns(agent.id);
      assert.deepEqual(
        items.map((run) => run.map((i) => i.customer)),
        [['a', 'b', 'c']],
        'a full batch closes at once',
      );
    });

    it('pausing the agent pauses its poller; what arrived meanwhile is skipped unless the trigger delivers it', async () => {
      const skipping = await newAgent('skips missed');
      const delivering = await newAgent('delivers missed');
      const skip = await addTrigger(skipping.id, {});
      const deliver = await addTrigger(delivering.id, { on_resume: 'deliver_missed' });
      await poll(skip);
      await poll(deliver);
      for (const agent of [skipping, delivering]) {
        const paused = await c.call('POST', `/agents/${agent.id}/state`, { state: 'paused' });
        assert.equal(paused.status, 200, JSON.stringify(paused.body));
      }
      const schedule = await h.client.schedule
        .getHandle(scheduleIdOf(skip as { id: string; agent_id: string }))
        .describe();
      assert.equal(schedule.state.paused, true, "the poller's schedule is paused in Temporal");
      await insert({ customer: 'while paused', total: 7 });
      assert.match(String(await poll(skip)), /0 events/, 'a paused agent does not act');

      for (const agent of [skipping, delivering])
        assert.equal((await c.call('POST', `/agents/${agent.id}/state`, { state: 'live' })).status, 200);
      await poll(skip);
      await poll(deliver);
      await insert({ customer: 'after', total: 8 });
      await poll(skip);
      await poll(deliver);
      assert.deepEqual(
        (await itemsOfRuns(skipping.id)).map((run) => run[0].customer),
        ['after'],
      );
      assert.deepEqual(
        (await itemsOfRuns(delivering.id)).map((run) => run[0].customer),
        ['while paused', 'after'],
      );
    });

    it('a row whose transaction commits after a later row was read still starts its run, once', async () => {
      const agent = await newAgent('late commits');
      const trigger = await addTrigger(agent.id, {});
      assert.match(String(await poll(trigger)), /0 events/);
      // The slow writer takes the lower id and holds its transaction; the quick one takes the next and commits.
      const slow = await db.admin.transaction();
      try {
        await slow('orders').insert({ customer: 'slow writer', total: 1 });
        await insert({ customer: 'quick writer', total: 2 });
        assert.match(String(await poll(trigger)), /1 events, 1 runs started/, 'the poll sees the committed row only');
        await slow.commit();
      } catch (err) {
        await slow.rollback();
        throw err;
      }
      assert.match(String(await poll(trigger)), /1 events, 1 runs started/, 'the late row is read at the next poll');
      assert.match(String(await poll(trigger)), /0 events/, 'and not again');
      assert.deepEqual(
        (await itemsOfRuns(agent.id)).map((run) => run[0].customer),
        ['quick writer', 'slow writer'],
      );
    });

    it('a pause while a poll opens runs leaves the rest of its rows for after the resume (deliver_missed)', async () => {
      const agent = await newAgent('paused mid-poll');
      const trigger = await addTrigger(agent.id, { on_resume: 'deliver_missed' });
      assert.match(String(await poll(trigger)), /0 events/);
      await insert({ customer: 'first', total: 1 }, { customer: 'second', total: 2 }, { customer: 'third', total: 3 });
      // The agent is paused the moment the poll has opened its first run: as a person pressing Pause would, then.
      const knex = h.stack.knex;
      const fn = `pause_${agent.id.replace(/-/g, '_')}`;
      await knex.raw(`create function ${fn}() returns trigger language plpgsql as $$
        begin update agents set state = 'paused' where id = new.agent_id; return new; end $$`);
      await knex.raw(`create trigger ${fn} after insert on agent_events for each row
        when (new.kind = 'trigger_fired' and new.agent_id = '${agent.id}') execute function ${fn}()`);
      try {
        assert.match(String(await poll(trigger)), /3 events, 1 runs started/);
      } finally {
        await knex.raw(`drop trigger if exists ${fn} on agent_events`);
        await knex.raw(`drop function if exists ${fn}()`);
      }
      assert.equal((await knex('agents').where({ id: agent.id }).first('state')).state, 'paused');
      assert.equal((await c.call('POST', `/agents/${agent.id}/state`, { state: 'live' })).status, 200);
      assert.match(String(await poll(trigger)), /2 events, 2 runs started/, 'the rows the pause stopped come now');
      assert.match(String(await poll(trigger)), /0 events/);
      const runs = await runsOf(agent.id);
      assert.deepEqual(
        runs.map((r) => (JSON.parse(r.input as string) as Json[])[0].customer),
        ['first', 'second', 'third'],
      );
      for (const run of runs.slice(1)) assert.equal((await waitForRun(h, run.id)).status, 'completed');
    });

    it('skip_missed starts from the resume: a row written right after it starts a run', async () => {
      const agent = await newAgent('resumed');
      const trigger = await addTrigger(agent.id, {});
      assert.match(String(await poll(trigger)), /0 events/);
      assert.equal((await c.call('POST', `/agents/${agent.id}/state`, { state: 'paused' })).status, 200);
      await insert({ customer: 'during the pause', total: 1 });
      assert.equal((await c.call('POST', `/agents/${agent.id}/state`, { state: 'live' })).status, 200);
      await insert({ customer: 'right after the resume', total: 2 });
      assert.match(String(await poll(trigger)), /1 events, 1 runs started/);
      assert.deepEqual(
        (await itemsOfRuns(agent.id)).map((run) => run[0].customer),
        ['right after the resume'],
      );
    });

    it('a poll that fails is told once on the timeline, and the trigger goes on once it works again', async () => {
      const agent = await newAgent('renamed table');
      const trigger = await addTrigger(agent.id, { options: { table: 'invoices', column: 'id' } });
      assert.ok((await poll(trigger)) instanceof Error);
      assert.ok((await poll(trigger)) instanceof Error);
      const errors = (await c.call('GET', `/agents/${agent.id}/timeline?kind=trigger_error`)).body.data as Json[];
      assert.equal(errors.length, 1, 'the same failure is told once');
      assert.match(errors[0].message, /could not read the connection: .*invoices/);

      await db.admin.schema.createTable('invoices', (t) => t.increments('id'));
      if (kind === 'postgres') await db.admin.raw('grant all on invoices, invoices_id_seq to app');
      assert.match(String(await poll(trigger)), /0 events/);
      await db.admin('invoices').insert({});
      assert.match(String(await poll(trigger)), /1 events, 1 runs started/);
    });
  });
