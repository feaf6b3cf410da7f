// The dashboard's daily figures, computed from real runs.
import assert from 'node:assert/strict';
import { checkedFetch } from '../support/openapi-check';
import {
  createHarness,
  createLiveAgent,
  createTestWorkspace,
  startApi,
  startTestRun,
  waitForRun,
  type Harness,
} from '../support/harness';

describe('daily stats', () => {
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

  it('counts today’s runs by status, their items and failures, and fills days without runs with zeros', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'numbers',
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'clean' },
        { kind: 'transform', id: 'clean', cast: { n: 'number' }, next: 'out' },
        { kind: 'output', id: 'out', format: 'json' },
      ],
    });
    for (const input of ['[{"n":"1"},{"n":"2"}]', '[{"n":"3"},{"n":"x"}]']) {
      await waitForRun(h, (await startTestRun(h, workspace.id, agent.id, input)).id);
    }
    const res = await checkedFetch(`${api.url}/v1/stats/daily?days=7`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      data: {
        date: string;
        runs: number;
        items: number;
        failed_items: number;
        by_status: Record<string, number>;
        avg_duration_ms: number | null;
      }[];
    };
    assert.equal(body.data.length, 7);
    const today = body.data.at(-1)!;
    assert.equal(today.date, new Date().toISOString().slice(0, 10));
    assert.equal(today.runs, 2);
    assert.deepEqual(today.by_status, { completed: 2 });
    assert.equal(today.items, 4);
    assert.equal(today.failed_items, 1);
    assert.ok(today.avg_duration_ms !== null && today.avg_duration_ms >= 0);
    assert.ok(body.data.slice(0, 6).every((d) => d.runs === 0 && d.avg_duration_ms === null));

    const bad = await checkedFetch(`${api.url}/v1/stats/daily?days=0`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(bad.status, 400);
  });
});
