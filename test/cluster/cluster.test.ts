// The production shape (test/cluster/stack.ts): what a user does works across web processes and workers, limits
// are shared between the web processes, and a run survives losing a worker.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { createApiKey } from '../../db/api-keys';
import { createAgent } from '../../db/agents';
import { createKnex } from '../../db/knex';
import { createWorkspace, setApiEnabled } from '../../db/workspaces';
import { agentSpecSchema } from '../../model/agent';
import { startCluster, type Cluster } from './stack';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('Cadre on a Temporal cluster and PostgreSQL: two web processes, two workers', function () {
  this.timeout(900_000);
  let cluster: Cluster;
  let knex: Knex;
  let key: string;
  let workspaceId: string;

  before(async () => {
    cluster = await startCluster({ webEnv: { CADRE_API_RATE_LIMIT: '5' } });
    knex = createKnex(cluster.databaseUrl, { max: 4 });
    const ws = await createWorkspace(knex, 'cluster', 'enterprise');
    await setApiEnabled(knex, ws.id, true);
    workspaceId = ws.id;
    key = (await createApiKey(knex, ws.id, 'cluster key', ['run', 'read', 'manage'])).key;
  });
  after(async () => {
    await knex?.destroy();
    await cluster?.stop();
  });

  const call = async (web: number, url: string, json?: unknown, apiKey = key) => {
    const res = await fetch(`${cluster.webs[web].url}/v1${url}`, {
      method: json === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const live = async (file: string) => {
    const spec = agentSpecSchema.parse(
      JSON.parse(fs.readFileSync(path.join(__dirname, '../../examples', file), 'utf8')),
    );
    const agent = await createAgent(knex, workspaceId, spec);
    await knex('agents').where({ id: agent.id }).update({ state: 'live' });
    return agent.id;
  };
  async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 300_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check().catch(() => undefined);
      if (v !== undefined) return v;
      if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it('a run started on one web process is approved on the other and completes', async () => {
    const agentId = await live('approve-large-payments.json');
    const started = await call(0, `/agents/${agentId}/run`, {
      input: JSON.stringify([{ payee: 'Globex', amount: 4200 }]),
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const approval = await until('the approval', async () => {
      const list = await call(1, `/approvals?run_id=${started.body.id}`);
      return list.body.data.find((a: Json) => a.status === 'pending');
    });
    const decided = await call(1, `/approvals/${approval.id}/decision`, { decision: 'approve' });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    const run = await until('the run to end', async () => {
      const r = await call(0, `/runs/${started.body.id}`);
      return r.body.status === 'completed' ? r.body : undefined;
    });
    assert.equal(run.counts.done, 1);
  });

  it('a per-key rate limit is one budget across both web processes', async () => {
    const { key: fresh } = await createApiKey(knex, workspaceId, 'rate key', ['read']);
    // 5 a second in bursts of 50: 80 requests alternating between the two let about 50 through, not 80.
    let ok = 0;
    for (let i = 0; i < 80; i++) if ((await call(i % 2, '/agents', undefined, fresh)).status === 200) ok++;
    assert.ok(ok >= 50 && ok < 65, `${ok} of 80 let through (per process it would be all 80)`);
  });

  it('SIGKILL of one worker during a 20,000-item run: the other finishes it, every item counted once', async () => {
    const agentId = await live('running-total.json');
    const rows = Array.from({ length: 20_000 }, (_, i) => `O-${i},${(i % 7) + 1}`);
    const started = await call(0, `/agents/${agentId}/run`, { input: ['order,quantity', ...rows].join('\n') });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    await until('the items', async () =>
      (await call(1, `/runs/${started.body.id}`)).body.counts.total > 0 ? true : undefined,
    );
    process.kill(-cluster.workers[0].child.pid!, 'SIGKILL');
    const run = await until('the run to end', async () => {
      const r = await call(1, `/runs/${started.body.id}`);
      return ['completed', 'failed'].includes(r.body.status) ? r.body : undefined;
    });
    assert.equal(run.status, 'completed');
    assert.deepEqual([run.counts.done, run.counts.failed], [20_000, 0]);
    const state = await call(0, `/agents/${agentId}/state-store/orders_seen`);
    assert.equal(state.body.value, 20_000);
  });
});
