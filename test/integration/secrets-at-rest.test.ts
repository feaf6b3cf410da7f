// Secrets handed out once (API keys, webhook signing secrets, Run Mode tokens) are never stored as they are:
// a scan of every table finds none of them.
import assert from 'node:assert/strict';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';

describe('secrets at rest', () => {
  let h: Harness;
  let api: { url: string; close(): Promise<void> };
  before(async () => {
    h = await createHarness({ worker: false });
    api = await startApi(h);
  });
  after(async () => {
    await api?.close();
    await h?.close();
  });

  it('keeps no API key, webhook secret or Run Mode token in plain text in any table', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, {
      name: 'hooked',
      nodes: [{ kind: 'input', id: 'in', next: null }],
      policy: { public_access: true },
    });
    const post = async (path: string, body: unknown) =>
      (await (
        await fetch(`${api.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as Record<string, string>;
    const hook = await post(`/v1/agents/${agent.id}/triggers`, { kind: 'webhook' });
    const link = await post(`/v1/agents/${agent.id}/run-links`, {});
    const created = await post('/v1/api-keys', { name: 'another', scopes: ['read'] });
    const secrets = [key, created.key, hook.secret, hook.secret.slice('whsec_'.length), link.token];
    assert.ok(secrets.every((s) => typeof s === 'string' && s.length > 20));

    const tables: string[] = (
      await h.stack.knex.raw(`select tablename from pg_tables where schemaname = 'public'`)
    ).rows.map((r: { tablename: string }) => r.tablename);
    assert.ok(tables.includes('api_keys') && tables.includes('triggers') && tables.includes('run_links'));
    const holding = async (table: string, text: string) =>
      (
        await h.stack.knex.raw(
          `select count(*)::int as n from ${JSON.stringify(table)} t where position(? in row_to_json(t)::text) > 0`,
          [text],
        )
      ).rows[0].n as number;
    // The scan finds what is stored (the key's lookup prefix is), so finding nothing below means something.
    assert.equal(await holding('api_keys', created.prefix), 1);
    for (const table of tables) {
      for (const secret of secrets) {
        assert.equal(await holding(table, secret), 0, `${table} holds a secret in plain text`);
      }
    }
  });
});
