// Triggers against the real dev server: Temporal Schedules (fire, pause, resume, reconcile), signed webhooks,
// public forms, chains between agents, and the agent timeline that records every fire and every skip.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { ScheduleNotFoundError } from '@temporalio/client';
import { reconcileSchedules, scheduleIdOf } from '../../schedules/sync';
import { checkedFetch } from '../support/openapi-check';
import { openRun } from '../../db/open-run';
import { findTemporalCli } from '../../scripts/temporal-cli';
import { runSearchAttributes, runWorkflowId } from '../../model/run-identity';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  waitForRun,
  type Harness,
} from '../support/harness';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Json = any;

/** Counts items in the agent's state store: a side effect a skipped run must not have. */
const countingAgent = (name: string) => ({
  name,
  nodes: [
    { kind: 'input', id: 'in', format: 'auto', next: 'count' },
    { kind: 'tool', id: 'count', tool: 'state.increment', arguments: { key: 'seen', by: 1 }, next: 'out' },
    { kind: 'output', id: 'out', format: 'json' },
  ],
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

describe('triggers', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  let key: string;
  let ws: string;

  before(async () => {
    h = await createHarness();
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    key = t.key;
    ws = t.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  const call = async (path: string, init: { method?: string; json?: unknown; key?: string | null } = {}) => {
    const headers: Record<string, string> = {};
    const k = init.key === undefined ? key : init.key;
    if (k) headers.authorization = `Bearer ${k}`;
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const res = await checkedFetch(`${api.url}${path}`, {
      method: init.method ?? (init.json !== undefined ? 'POST' : 'GET'),
      headers,
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as Json };
  };
  const setState = (agentId: string, state: string) => call(`/v1/agents/${agentId}/state`, { json: { state } });
  const runsOf = (agentId: string) => h.stack.knex('runs').where({ agent_id: agentId }).orderBy('created_at');
  const timeline = async (agentId: string) =>
    (await call(`/v1/agents/${agentId}/timeline?limit=100`)).body.data as Json[];

  describe('schedules', () => {
    it('fires on its interval, stops while the agent is paused (schedule shown paused) and resumes', async () => {
      const agent = await createLiveAgent(h, ws, countingAgent('every second'));
      const created = await call(`/v1/agents/${agent.id}/triggers`, {
        json: { kind: 'schedule', schedule: { type: 'interval', every: 1, unit: 'seconds' } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const trigger = created.body;
      assert.equal(trigger.schedule.schedule_id, `agent-${agent.id}-trigger-${trigger.id}`);
      assert.equal(trigger.schedule.description, 'every second');
      assert.equal(trigger.schedule.next_fire_times.length, 5);
      assert.match(trigger.schedule.policies, /skip/);

      const completed = async () =>
        (await runsOf(agent.id)).filter((r) => r.trigger === 'schedule' && r.status === 'completed');
      await eventually('two scheduled runs', async () => (await completed()).length >= 2);
      const run = (await completed())[0];
      assert.equal(run.trigger_id, trigger.id);
      // No input configured: the run is one empty item; when it fired is run metadata, not its input.
      assert.equal(run.input, '');
      assert.equal(run.total, 1);
      assert.ok(run.fired_at instanceof Date, `fired_at is the scheduled time: ${run.fired_at}`);
      assert.ok(run.fired_at <= run.created_at);
      const shown = (await call(`/v1/runs/${run.id}`)).body;
      assert.equal(shown.trigger_id, trigger.id);
      assert.equal(shown.fired_at, run.fired_at.toISOString());

      assert.equal((await setState(agent.id, 'paused')).status, 200);
      const handle = h.client.schedule.getHandle(trigger.schedule.schedule_id);
      assert.equal((await handle.describe()).state.paused, true);
      const cli = findTemporalCli()!;
      const described = JSON.parse(
        execFileSync(cli, [
          'schedule',
          'describe',
          '--schedule-id',
          trigger.schedule.schedule_id,
          '--address',
          h.temporalConfig.address,
          '-o',
          'json',
        ]).toString(),
      );
      assert.equal(described.schedule.state.paused, true, '`temporal schedule describe` shows it paused');
      const pausedAt = new Date();
      await sleep(4_000); // four intervals
      const duringPause = (await runsOf(agent.id)).filter((r) => r.created_at > pausedAt);
      // A fire already on its way at the moment of pausing may open a run; it ends skipped, having done nothing.
      assert.ok(
        duringPause.every((r) => r.status === 'skipped'),
        `no run executes while paused: ${JSON.stringify(duringPause.map((r) => r.status))}`,
      );
      assert.ok(duringPause.length <= 1);
      const listed = (await call(`/v1/agents/${agent.id}/triggers`)).body.data;
      assert.equal(listed[0].schedule.paused, true);
      assert.equal(listed[0].active, false);

      assert.equal((await setState(agent.id, 'live')).status, 200);
      assert.equal((await handle.describe()).state.paused, false);
      const resumedAt = new Date();
      await eventually('a run after resuming', async () => (await completed()).some((r) => r.created_at > resumedAt));

      // Deleting the trigger deletes its schedule.
      assert.equal((await call(`/v1/triggers/${trigger.id}`, { method: 'DELETE' })).status, 204);
      await assert.rejects(handle.describe(), ScheduleNotFoundError);
      const kinds = (await timeline(agent.id)).map((e) => e.kind);
      for (const kind of ['trigger_added', 'trigger_fired', 'state_changed', 'run_finished', 'trigger_removed'])
        assert.ok(kinds.includes(kind), `timeline has ${kind}: ${kinds.join(', ')}`);
    });

    it('"run now" fires a calendar schedule once; its next fire times match Temporal\'s', async () => {
      const agent = await createLiveAgent(h, ws, countingAgent('weekday mornings'));
      const created = await call(`/v1/agents/${agent.id}/triggers`, {
        json: {
          kind: 'schedule',
          schedule: { type: 'weekly', days: ['mon', 'tue', 'wed', 'thu', 'fri'], at: '09:00' },
          timezone: 'Europe/Berlin',
          input: '[{"n":1},{"n":2}]',
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const trigger = created.body;
      assert.equal(trigger.name, 'every weekday at 09:00, Europe/Berlin');
      const info = await h.client.schedule.getHandle(trigger.schedule.schedule_id).describe();
      assert.deepEqual(
        info.info.nextActionTimes.slice(0, 5).map((d) => d.toISOString()),
        trigger.schedule.next_fire_times,
      );
      assert.equal(info.policies.overlap, 'SKIP');
      assert.equal(info.policies.catchupWindow, 300_000);

      assert.equal((await call(`/v1/triggers/${trigger.id}/fire`, { method: 'POST' })).status, 202);
      const run = await eventually('the fired run', async () => (await runsOf(agent.id))[0]);
      const done = await waitForRun(h, run.id);
      assert.equal(done.status, 'completed');
      assert.equal(done.trigger, 'schedule');
      assert.equal(done.total, 2);
      assert.equal((await runsOf(agent.id)).length, 1);
      const state = await h.stack.knex('agent_state').where({ agent_id: agent.id, key: 'seen' }).first();
      assert.equal(state.value, 2);
    });

    it('refuses an invalid cron expression or time zone with 422', async () => {
      const agent = await createLiveAgent(h, ws, countingAgent('bad schedule'));
      const badCron = await call(`/v1/agents/${agent.id}/triggers`, {
        json: { kind: 'schedule', schedule: { type: 'cron', expression: '61 * * * *' } },
      });
      assert.equal(badCron.status, 422);
      assert.equal(badCron.body.code, 'invalid_schedule');
      // Named by its field, as a body's 422s are: the schedule builder shows it at the cron expression.
      assert.deepEqual(badCron.body.errors, [{ path: 'schedule.expression', message: badCron.body.detail }]);
      // Tokens of other cron dialects: Temporal refuses them (or, "#", misreads them); save and preview both say
      // which token, with the same answer.
      for (const [expression, token] of [
        ['0 9 L * *', '"L"'],
        ['0 9 ? * *', '"?"'],
        ['0 9 1W * *', '"1W"'],
        ['0 9 * * 5L', '"5L"'],
        ['0 9 * * 5#3', '"5#3"'],
      ]) {
        const json = { schedule: { type: 'cron', expression }, timezone: 'Europe/Berlin' };
        const saved = await call(`/v1/agents/${agent.id}/triggers`, { json: { kind: 'schedule', ...json } });
        const previewed = await call('/v1/schedules/preview', { json });
        for (const answer of [saved, previewed]) {
          assert.equal(answer.status, 422, `${expression}: ${JSON.stringify(answer.body)}`);
          assert.equal(answer.body.code, 'invalid_schedule');
          assert.ok(answer.body.detail.includes(token), `${expression}: ${answer.body.detail}`);
        }
        assert.equal(saved.body.detail, previewed.body.detail);
      }
      // Valid as written, but no date ever matches it: a schedule that never fires is refused too.
      const never = { schedule: { type: 'cron', expression: '0 0 30 2 *' }, timezone: 'UTC' };
      for (const answer of [
        await call(`/v1/agents/${agent.id}/triggers`, { json: { kind: 'schedule', ...never } }),
        await call('/v1/schedules/preview', { json: never }),
      ]) {
        assert.equal(answer.status, 422, JSON.stringify(answer.body));
        assert.equal(answer.body.code, 'schedule_never_fires');
        assert.match(answer.body.detail, /never fires/);
      }
      const badZone = await call(`/v1/agents/${agent.id}/triggers`, {
        json: { kind: 'schedule', schedule: { type: 'daily', at: '09:00' }, timezone: 'Mars/Olympus' },
      });
      assert.equal(badZone.status, 422);
      assert.match(badZone.body.detail, /IANA time zone/);
      assert.equal((await call(`/v1/agents/${agent.id}/triggers`)).body.data.length, 0);
    });

    it("previews exactly the fire times Temporal's own schedule has, over expressions and zones", async () => {
      const cases: [string, string][] = [
        ['0 9 13 * 5', 'UTC'], // Friday the 13th only: Temporal wants both, classic cron either
        ['0 9 13 * 5', 'Europe/Berlin'],
        ['30 2 26-30 3 *', 'Europe/Berlin'], // 02:30 does not exist on 28 March 2027: no fire that day
        ['30 2 30,31 10 *', 'Europe/Berlin'], // 02:30 happens twice on 31 October 2027: the second one
        ['30 1 * * 0', 'America/New_York'], // autumn repeat of 01:30 on Sundays
        ['0 2 * 3 0', 'America/New_York'], // 02:00 skipped on the second Sunday of March
        ['15 9 1,15 * 1-5', 'Asia/Kolkata'],
        ['0 0 29 2 *', 'Pacific/Auckland'],
        ['*/20 8-10 * * mon-fri', 'Australia/Lord_Howe'], // a half-hour daylight-saving shift
        ['0 12 * * 7', 'UTC'], // 7 is Sunday
      ];
      for (const [expression, timezone] of cases) {
        const preview = await call('/v1/schedules/preview', {
          json: { schedule: { type: 'cron', expression }, timezone },
        });
        assert.equal(preview.status, 200, `${expression} ${timezone}: ${JSON.stringify(preview.body)}`);
        // Temporal's own answer for the same spec, from a schedule made here, outside Cadre.
        const handle = await h.client.schedule.create({
          scheduleId: `compare-${randomUUID()}`,
          spec: { cronExpressions: [expression], timezone },
          action: { type: 'startWorkflow', workflowType: 'none', taskQueue: 'none', args: [] },
          state: { paused: true },
        });
        const temporal = (await handle.describe()).info.nextActionTimes.slice(0, 5).map((d) => d.toISOString());
        await handle.delete();
        assert.equal(preview.body.next_fire_times.length, Math.min(5, temporal.length));
        assert.deepEqual(preview.body.next_fire_times, temporal, `${expression} in ${timezone}`);
      }

      const local = (iso: string, timeZone: string) =>
        new Intl.DateTimeFormat('en-CA', {
          timeZone,
          year: 'numeric',
          month: '2-digit',
          day: '2-digit',
          hour: '2-digit',
          minute: '2-digit',
          weekday: 'short',
          hourCycle: 'h23',
        }).format(new Date(iso));
      const preview = async (expression: string, timezone: string) =>
        (await call('/v1/schedules/preview', { json: { schedule: { type: 'cron', expression }, timezone } })).body
          .next_fire_times as string[];
      for (const at of await preview('0 9 13 * 5', 'UTC'))
        assert.match(local(at, 'UTC'), /^Fri, \d{4}-\d\d-13, 09:00$/);
      // No 03:00 fire standing in for a 02:30 that does not exist (classic cron engines fire then).
      for (const at of await preview('30 2 26-30 3 *', 'Europe/Berlin'))
        assert.match(local(at, 'Europe/Berlin'), /, 02:30$/, at);
      // The 31st of October is always after the change back: 02:30 CET, 01:30 UTC, never the first 02:30 (CEST).
      for (const at of (await preview('30 2 30,31 10 *', 'Europe/Berlin')).filter((t) => t.slice(5, 10) === '10-31'))
        assert.match(at, /T01:30:00\.000Z$/);
    });

    it('gives each scheduled run the input the schedule carries, checked against the input node when saved', async () => {
      const csvAgent = (name: string) => ({
        ...countingAgent(name),
        nodes: [{ kind: 'input', id: 'in', format: 'csv', next: 'count' }, ...countingAgent(name).nodes.slice(1)],
      });
      const agent = await createLiveAgent(h, ws, csvAgent('csv schedule'));
      const schedule = { type: 'daily', at: '03:00' };
      const refused = async (json: object, pattern: RegExp) => {
        const res = await call(`/v1/agents/${agent.id}/triggers`, { json: { kind: 'schedule', schedule, ...json } });
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.equal(res.body.code, 'input_unparseable');
        assert.match(res.body.detail, pattern);
        assert.deepEqual(res.body.errors, [{ path: 'input', message: res.body.detail }]);
      };
      await refused({ input: '{"id": 1', input_format: 'json' }, /the schedule's input is not JSON/);
      await refused({ input: 'id,name\n1,Ada,extra', input_format: 'csv' }, /the schedule's input is not CSV/);
      await refused({ input: '[{"id": 1}]', input_format: 'json' }, /the agent's input node \(csv\) cannot read/);

      // CSV in, two items a fire; and a schedule with no input still runs the CSV agent, on one empty item.
      const withCsv = await call(`/v1/agents/${agent.id}/triggers`, {
        json: { kind: 'schedule', schedule, input: 'id,name\n1,Ada\n2,Bo\n', input_format: 'csv' },
      });
      assert.equal(withCsv.status, 201, JSON.stringify(withCsv.body));
      assert.equal(withCsv.body.config.input_format, 'csv');
      const without = await call(`/v1/agents/${agent.id}/triggers`, { json: { kind: 'schedule', schedule } });
      assert.equal(without.status, 201, JSON.stringify(without.body));
      assert.equal(without.body.config.input, null);

      for (const [trigger, total] of [
        [withCsv.body, 2],
        [without.body, 1],
      ] as const) {
        assert.equal((await call(`/v1/triggers/${trigger.id}/fire`, { method: 'POST' })).status, 202);
        const run = await eventually('the fired run', async () =>
          (await runsOf(agent.id)).find((r) => r.trigger_id === trigger.id),
        );
        const done = await waitForRun(h, run.id);
        assert.equal(done.status, 'completed', `${trigger.name}: ${done.error}`);
        assert.equal(done.total, total);
        assert.ok(done.fired_at instanceof Date);
      }
      const items = await h.stack
        .knex('run_items')
        .join('runs', 'runs.id', 'run_items.run_id')
        .where({ 'runs.agent_id': agent.id })
        .orderBy(['runs.created_at', 'run_items.seq'])
        .pluck('run_items.data');
      // Each item as the counting step left it (its counter as `result`): the CSV rows, then the one empty item.
      assert.deepEqual(items, [{ id: '1', name: 'Ada', result: 1 }, { id: '2', name: 'Bo', result: 2 }, { result: 3 }]);
    });

    it('reconciles Temporal with the database: recreates a missing schedule, removes a stray one', async () => {
      const agent = await createLiveAgent(h, ws, countingAgent('reconciled'));
      await setState(agent.id, 'paused');
      const trigger = (
        await call(`/v1/agents/${agent.id}/triggers`, {
          json: { kind: 'schedule', schedule: { type: 'daily', at: '07:30' }, timezone: 'Asia/Tokyo' },
        })
      ).body;
      const handle = h.client.schedule.getHandle(trigger.schedule.schedule_id);
      assert.equal((await handle.describe()).state.paused, true, 'a paused agent gets a paused schedule');
      await handle.delete();
      const stray = scheduleIdOf({ agent_id: randomUUID(), id: randomUUID() });
      await h.client.schedule.create({
        scheduleId: stray,
        spec: { intervals: [{ every: '1h' }] },
        action: {
          type: 'startWorkflow',
          workflowType: 'scheduledRun',
          args: [{ triggerId: randomUUID() }],
          taskQueue: 'none',
        },
        state: { paused: true },
      });
      // Listing schedules is eventually consistent: reconcile once the stray is visible, as a restart would.
      await eventually('the stray schedule to be listed', async () => {
        for await (const s of h.client.schedule.list()) if (s.scheduleId === stray) return true;
        return false;
      });

      const result = await reconcileSchedules({
        knex: h.stack.knex,
        temporal: h.client,
        temporalConfig: h.temporalConfig,
      });
      assert.ok(result.removed.includes(stray));
      await assert.rejects(h.client.schedule.getHandle(stray).describe(), ScheduleNotFoundError);
      const restored = await handle.describe();
      assert.equal(restored.state.paused, true);
      assert.deepEqual(restored.spec.timezone, 'Asia/Tokyo');
    });
  });

  describe('paused agent', () => {
    it('a run already on its way when the agent was paused ends skipped, with no side effect, in the timeline', async () => {
      const agent = await createLiveAgent(h, ws, countingAgent('paused in flight'));
      const workspace = await h.stack.knex('workspaces').where({ id: ws }).first();
      const opened = await openRun(h.stack.knex, { workspace, agent, input: '[{"a":1}]', trigger: 'webhook' });
      assert.equal(opened.outcome, 'created');
      const run = (opened as { run: { id: string; workspace_id: string; agent_id: string; trigger: string } }).run;
      assert.equal((await setState(agent.id, 'paused')).status, 200);
      // The workflow starts after the pause, as a fire in flight would.
      const result = await h.client.workflow.execute('agentRun', {
        workflowId: runWorkflowId(run.id),
        taskQueue: h.temporalConfig.taskQueue,
        args: [{ runId: run.id }],
        typedSearchAttributes: runSearchAttributes(run),
      });
      assert.equal(result, 'skipped');
      const row = await h.stack.knex('runs').where({ id: run.id }).first();
      assert.equal(row.status, 'skipped');
      assert.match(row.error, /paused/);
      assert.equal(await h.stack.knex('agent_state').where({ agent_id: agent.id }).first(), undefined);
      const skipped = (await timeline(agent.id)).find((e) => e.kind === 'trigger_skipped');
      assert.equal(skipped.run_id, run.id);
      assert.equal(skipped.details.reason, 'paused');
    });

    it('a scheduled fire racing the pause ends as a skipped run that did nothing, not counted', async () => {
      const agent = await createLiveAgent(h, ws, countingAgent('paused schedule'));
      const trigger = (
        await call(`/v1/agents/${agent.id}/triggers`, {
          json: { kind: 'schedule', schedule: { type: 'daily', at: '03:00' } },
        })
      ).body;
      await setState(agent.id, 'paused');
      assert.equal((await call(`/v1/triggers/${trigger.id}/fire`, { method: 'POST' })).body.code, 'agent_not_live');
      const usage = async () =>
        Number((await h.stack.knex('workspace_usage').where({ workspace_id: ws }).sum('runs as n').first())?.n ?? 0);
      const usedBefore = await usage();
      // What the schedule starts at a fire, started by hand as a fire racing the pause would be: Temporal names
      // each fire's workflow after its scheduled time.
      const firedAt = '2026-01-05T03:00:00Z';
      const fire = () =>
        h.client.workflow.execute('scheduledRun', {
          workflowId: `scheduled-${trigger.id}-${firedAt}`,
          taskQueue: h.temporalConfig.taskQueue,
          args: [{ triggerId: trigger.id }],
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        });
      assert.match(String(await fire()), /^skipped: the agent is paused/);
      const runs = await runsOf(agent.id);
      assert.equal(runs.length, 1, 'the fire is a run');
      const [run] = runs;
      assert.equal(run.status, 'skipped');
      assert.equal(run.trigger, 'schedule');
      assert.equal(run.trigger_id, trigger.id);
      assert.equal(run.fired_at.toISOString(), new Date(firedAt).toISOString());
      assert.match(run.error, /paused when the schedule fired, so it did nothing/);
      assert.ok(run.ended_at);
      assert.equal(await h.stack.knex('run_items').where({ run_id: run.id }).first(), undefined);
      assert.equal(await h.stack.knex('agent_state').where({ agent_id: agent.id }).first(), undefined);
      assert.equal(await usage(), usedBefore, 'a skipped run is not counted against the plan');
      const shown = (await call(`/v1/runs?agent_id=${agent.id}`)).body.data;
      assert.deepEqual(
        shown.map((r: Json) => [r.status, r.trigger]),
        [['skipped', 'schedule']],
      );
      // The same fire again (a retried activity, a replayed workflow) makes no second run.
      await fire();
      assert.equal((await runsOf(agent.id)).length, 1);
      const skips = (await timeline(agent.id)).filter((e) => e.kind === 'trigger_skipped');
      assert.equal(skips.length, 1);
      assert.equal(skips[0].trigger_id, trigger.id);
      assert.equal(skips[0].run_id, run.id);
      assert.equal(skips[0].details.reason, 'paused');
    });
  });

  describe('webhooks', () => {
    /** Standard Webhooks signing, written out here rather than borrowed from the code under test. */
    const sign = (secret: string, id: string, ts: number, body: string) =>
      'v1,' +
      createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
        .update(`${id}.${ts}.${body}`)
        .digest('base64');
    const deliver = (url: string, body: string, headers: Record<string, string>) =>
      checkedFetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const now = () => Math.floor(Date.now() / 1000);

    let agent: { id: string };
    let hook: Json;
    before(async () => {
      agent = await createLiveAgent(h, ws, countingAgent('webhook'));
      const created = await call(`/v1/agents/${agent.id}/triggers`, {
        json: { kind: 'webhook', filter: { field: 'amount', op: 'gt', value: 100 } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      hook = created.body;
    });

    it('shows the secret once and stores it sealed', async () => {
      assert.match(hook.secret, /^whsec_/);
      assert.equal(hook.webhook.url, `http://cadre.test/v1/hooks/${hook.id}`);
      const again = await call(`/v1/triggers/${hook.id}`);
      assert.equal(again.body.secret, undefined);
      const row = await h.stack.knex('triggers').where({ id: hook.id }).first();
      assert.ok(!row.secret_encrypted.includes(hook.secret.slice(6)), 'not in plain text');
      assert.ok(!JSON.stringify(row).includes(hook.secret));
    });

    it('a valid signature starts one run; bad, stale and replayed deliveries start nothing', async () => {
      const url = `${api.url}/v1/hooks/${hook.id}`;
      const body = JSON.stringify({ invoice: 'INV-7', amount: 250 });
      const id = `msg_${randomUUID()}`;
      const ts = now();
      const ok = await deliver(url, body, {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': sign(hook.secret, id, ts, body),
      });
      assert.equal(ok.status, 202, await ok.clone().text());
      const started: Json = await ok.json();
      const run = await waitForRun(h, started.run_id);
      assert.equal(run.status, 'completed');
      assert.equal(run.trigger, 'webhook');
      assert.equal(run.input, body, 'the JSON body is the run input');

      const bad = await deliver(url, body, {
        'webhook-id': `msg_${randomUUID()}`,
        'webhook-timestamp': String(ts),
        'webhook-signature': sign(hook.secret, id, ts, body), // signed for another id
      });
      assert.equal(bad.status, 401);
      assert.equal(((await bad.json()) as Json).code, 'signature_invalid');

      const oldTs = now() - 3600;
      const staleId = `msg_${randomUUID()}`;
      const stale = await deliver(url, body, {
        'webhook-id': staleId,
        'webhook-timestamp': String(oldTs),
        'webhook-signature': sign(hook.secret, staleId, oldTs, body),
      });
      assert.equal(stale.status, 401);
      assert.equal(((await stale.json()) as Json).code, 'timestamp_stale');

      const unsigned = await deliver(url, body, {});
      assert.equal(unsigned.status, 401);

      const replay = await deliver(url, body, {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': sign(hook.secret, id, ts, body),
      });
      assert.equal(replay.status, 409);
      const replayBody: Json = await replay.json();
      assert.equal(replayBody.code, 'duplicate_delivery');
      assert.equal(replayBody.run_id, started.run_id);

      assert.equal((await runsOf(agent.id)).length, 1, 'one run in all');
      const events = await timeline(agent.id);
      assert.ok(events.some((e) => e.kind === 'trigger_fired' && e.run_id === started.run_id));
      assert.ok(events.some((e) => e.kind === 'trigger_skipped' && e.details.reason === 'duplicate'));
    });

    it('filters deliveries by their fields, and refuses them with 409 while the agent is paused', async () => {
      const url = `${api.url}/v1/hooks/${hook.id}`;
      const signed = (body: string) => {
        const id = `msg_${randomUUID()}`;
        const ts = now();
        return {
          'webhook-id': id,
          'webhook-timestamp': String(ts),
          'webhook-signature': sign(hook.secret, id, ts, body),
        };
      };
      const before = (await runsOf(agent.id)).length;
      const small = JSON.stringify({ amount: 20 });
      const filtered = await deliver(url, small, signed(small));
      assert.equal(filtered.status, 200);
      assert.equal(((await filtered.json()) as Json).status, 'filtered_out');

      await setState(agent.id, 'paused');
      const big = JSON.stringify({ amount: 2000 });
      const refused = await deliver(url, big, signed(big));
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as Json).code, 'agent_not_live');
      await setState(agent.id, 'live');

      assert.equal((await runsOf(agent.id)).length, before, 'neither started a run');
      const reasons = (await timeline(agent.id))
        .filter((e) => e.kind === 'trigger_skipped')
        .map((e) => e.details.reason);
      assert.ok(reasons.includes('filtered_out'));
      assert.ok(reasons.includes('paused'));
    });

    it('rotating the secret makes the old one fail', async () => {
      const rotated = await call(`/v1/triggers/${hook.id}/rotate-secret`, { method: 'POST' });
      assert.equal(rotated.status, 200);
      assert.notEqual(rotated.body.secret, hook.secret);
      const body = JSON.stringify({ amount: 500 });
      const id = `msg_${randomUUID()}`;
      const ts = now();
      const old = await deliver(`${api.url}/v1/hooks/${hook.id}`, body, {
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': sign(hook.secret, id, ts, body),
      });
      assert.equal(old.status, 401);
      hook.secret = rotated.body.secret;
    });
  });

  describe('forms', () => {
    let agent: { id: string };
    let form: Json;
    before(async () => {
      agent = await createLiveAgent(h, ws, countingAgent('form'));
      const created = await call(`/v1/agents/${agent.id}/triggers`, {
        json: {
          kind: 'form',
          title: 'Expense claim',
          fields: [
            { name: 'email', label: 'Your email', type: 'email', required: true },
            { name: 'amount', label: 'Amount', type: 'number', required: true },
            { name: 'category', label: 'Category', type: 'select', options: ['travel', 'meals'] },
          ],
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      form = created.body;
    });

    it('serves its definition publicly and starts a run per valid submission', async () => {
      const def = await call(`/v1/forms/${form.id}`, { key: null });
      assert.equal(def.status, 200);
      assert.equal(def.body.title, 'Expense claim');
      assert.equal(def.body.fields.length, 3);
      assert.equal(def.body.accepting, true);
      assert.equal(form.form.url, `http://cadre.test/forms/${form.id}`);

      const sent = await call(`/v1/forms/${form.id}/submissions`, {
        key: null,
        json: { email: 'ana@example.com', amount: '42.5', category: 'meals' },
      });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const run = await waitForRun(h, sent.body.run_id);
      assert.equal(run.trigger, 'form');
      assert.deepEqual(JSON.parse(run.input), { email: 'ana@example.com', amount: 42.5, category: 'meals' });
    });

    it('names each invalid field, and rate-limits a client', async () => {
      const bad = await call(`/v1/forms/${form.id}/submissions`, {
        key: null,
        json: { email: 'not-an-email', category: 'rockets' },
      });
      assert.equal(bad.status, 422);
      assert.equal(bad.body.code, 'invalid_submission');
      const byField = Object.fromEntries(bad.body.errors.map((e: Json) => [e.field, e.message]));
      assert.match(byField.email, /email address/);
      assert.match(byField.amount, /required/);
      assert.match(byField.category, /one of: travel, meals/);

      let limited: Awaited<ReturnType<typeof call>> | undefined;
      for (let i = 0; i < 12 && !limited; i++) {
        const res = await call(`/v1/forms/${form.id}/submissions`, { key: null, json: {} });
        if (res.status === 429) limited = res;
      }
      assert.ok(limited, 'the client is rate limited');
      assert.ok(Number(limited.headers.get('retry-after')) > 0);
    });
  });

  describe('chains', () => {
    it("runs B once per completion of A, with A's outputs as input; a cycle is refused", async () => {
      const a = await createLiveAgent(h, ws, countingAgent('A'));
      const b = await createLiveAgent(h, ws, countingAgent('B'));
      const chain = await call(`/v1/agents/${b.id}/triggers`, {
        json: { kind: 'chain', source_agent_id: a.id },
      });
      assert.equal(chain.status, 201, JSON.stringify(chain.body));
      assert.equal(chain.body.name, 'When A finishes');

      const cycle = await call(`/v1/agents/${a.id}/triggers`, { json: { kind: 'chain', source_agent_id: b.id } });
      assert.equal(cycle.status, 422);
      assert.equal(cycle.body.code, 'chain_cycle');
      assert.match(cycle.body.detail, /A → B → A/);
      const self = await call(`/v1/agents/${a.id}/triggers`, { json: { kind: 'chain', source_agent_id: a.id } });
      assert.equal(self.status, 422);

      for (const input of ['[{"x":1},{"x":2}]', '[{"x":3}]']) {
        const started = await call(`/v1/agents/${a.id}/manual-run`, { json: { input } });
        assert.equal(started.status, 202);
        await waitForRun(h, started.body.id);
      }
      const bRuns = await eventually('two runs of B', async () => {
        const rows = await runsOf(b.id);
        return rows.length >= 2 && rows.every((r) => r.status === 'completed') && rows;
      });
      assert.equal(bRuns.length, 2);
      assert.deepEqual(
        bRuns.map((r) => JSON.parse(r.input)),
        // What A's output node collected: its items with the counter the state tool returned.
        [
          [
            { x: 1, result: 1 },
            { x: 2, result: 2 },
          ],
          [{ x: 3, result: 3 }],
        ],
      );
      assert.ok(bRuns.every((r) => r.trigger === 'chain'));
      await sleep(1_000);
      assert.equal((await runsOf(b.id)).length, 2, 'once per completion, never more');
      assert.equal((await timeline(a.id)).filter((e) => e.kind === 'chain_fired').length, 2);
      assert.equal((await timeline(b.id)).filter((e) => e.kind === 'trigger_fired').length, 2);
    });

    it('only fires on the chosen end statuses and when its filter matches', async () => {
      const a = await createLiveAgent(h, ws, countingAgent('A2'));
      const b = await createLiveAgent(h, ws, countingAgent('B2'));
      await call(`/v1/agents/${b.id}/triggers`, {
        json: {
          kind: 'chain',
          source_agent_id: a.id,
          on_statuses: ['completed'],
          filter: { field: 'counts.done', op: 'gte', value: 2 },
        },
      });
      const one = await call(`/v1/agents/${a.id}/manual-run`, { json: { input: '[{"x":1}]' } });
      await waitForRun(h, one.body.id);
      await eventually("the skip in B's timeline", async () =>
        (await timeline(b.id)).some((e) => e.kind === 'trigger_skipped' && e.details.reason === 'filtered_out'),
      );
      assert.equal((await runsOf(b.id)).length, 0);
    });
  });

  it('pages the timeline newest first', async () => {
    const agent = await createLiveAgent(h, ws, countingAgent('timeline'));
    for (const state of ['paused', 'live', 'paused']) await setState(agent.id, state);
    const first = await call(`/v1/agents/${agent.id}/timeline?limit=2`);
    assert.equal(first.body.data.length, 2);
    assert.equal(first.body.data[0].message.startsWith('live → paused'), true);
    const rest = await call(`/v1/agents/${agent.id}/timeline?limit=2&cursor=${first.body.next_cursor}`);
    assert.equal(rest.body.data[0].message.startsWith('live → paused'), true);
    assert.equal(rest.body.data[0].id < first.body.data[1].id, true);
    assert.equal((await call(`/v1/agents/${agent.id}/timeline?cursor=nonsense`)).status, 400);
  });
});
