// The schedules the examples ship with (examples/schedules/) run on a fresh install: imported as the demo seed imports
// them, made Temporal Schedules as the web process makes them at start, and fired, each gives a run whose items are
// the rows of the schedule's input (not `{"fired_at", "trigger"}`, which a CSV agent could not read).
import assert from 'node:assert/strict';
import { importExamples } from '../../../db/seeds';
import type { TriggerRow } from '../../../db/triggers';
import { deleteSchedule, scheduleIdOf, upsertSchedule } from '../../../schedules/sync';
import { createHarness, createTestWorkspace, items, waitForRun, type Harness } from '../../support/harness';

describe('examples: shipped schedules run', function () {
  this.timeout(120_000);
  let h: Harness;
  let schedules: TriggerRow[] = [];

  before(async () => {
    h = await createHarness();
  });
  after(async () => {
    for (const t of schedules) await deleteSchedule({ temporal: h.client }, t);
    await h?.close();
  });

  it('each shipped schedule fires a run of its own input that ends without a failed item', async () => {
    const { workspace } = await createTestWorkspace(h);
    await importExamples(h.stack.knex, workspace.id);
    schedules = await h.stack.knex('triggers').where({ workspace_id: workspace.id, kind: 'schedule' });
    assert.ok(schedules.length >= 1, 'the examples ship with a schedule');

    const deps = { temporal: h.client, temporalConfig: h.temporalConfig };
    for (const t of schedules) {
      const agent = await h.stack.knex('agents').where({ id: t.agent_id }).first('state', 'name');
      assert.equal(agent.state, 'live', `${agent.name} is live, so its schedule fires`);
      await upsertSchedule(deps, t, 'live');
      await h.client.schedule.getHandle(scheduleIdOf(t)).trigger();

      const deadline = Date.now() + 60_000;
      let run: { id: string } | undefined;
      while (!(run = await h.stack.knex('runs').where({ trigger_id: t.id }).first('id'))) {
        assert.ok(Date.now() < deadline, `${t.name} started a run`);
        await new Promise((r) => setTimeout(r, 200));
      }
      // Ended, or waiting only on people (an example may flag items for review).
      const ended = await waitForRun(h, run.id, (r) =>
        ['completed', 'needs_review', 'failed'].includes(String(r.status)),
      );
      assert.notEqual(ended.status, 'failed', `${t.name}: ${ended.error}`);
      assert.equal(Number(ended.failed), 0, `${t.name}: no item failed`);
      assert.equal(ended.trigger, 'schedule');
      assert.ok(ended.fired_at, 'when it fired is the run’s metadata');
      const config = t.config as { input: string };
      assert.equal(ended.input, config.input);
      const rows = await items(h, run.id);
      assert.ok(rows.length > 0);
      assert.ok(
        rows.every((i) => !('fired_at' in i.data) && !('trigger' in i.data)),
        'the items are the input’s, not fire metadata',
      );
    }
    const monday = schedules.find((t) => t.name === 'Monday invoice batch')!;
    const [csv] = await items(h, (await h.stack.knex('runs').where({ trigger_id: monday.id }).first('id')).id);
    assert.equal(csv.data.invoice, 'INV-1001', 'CSV row 1 of route-csv-rows’ schedule is its first item');
  });
});
