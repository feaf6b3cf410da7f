// Request budgets kept in PostgreSQL: the window limiter and the token buckets against the real database with the
// time set by the test, and a budget that two web processes (two apps on the one database) share rather than each
// counting its own.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { RateLimiter, TokenBuckets } from '../../api/rate-limit';
import { createHarness, createLiveAgent, createTestWorkspace, startApi, type Harness } from '../support/harness';

describe('request budgets shared through the database', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => (h = await createHarness({ worker: false })));
  after(() => h?.close());

  it('window limiter: the budget per window, then how long to wait; each client apart; a new window', async () => {
    const limiter = new RateLimiter(h.stack.knex, `test-${randomUUID()}`, 2, 60_000);
    const t = Date.UTC(2026, 0, 1);
    assert.equal(await limiter.take('a', t), 0);
    assert.equal(await limiter.take('a', t + 1_000), 0);
    assert.equal(await limiter.blocked('a', t + 2_000), 58);
    assert.equal(await limiter.take('a', t + 2_000), 58);
    assert.equal(await limiter.take('b', t + 2_000), 0, 'each client has its own budget');
    assert.equal(await limiter.take('a', t + 60_000), 0, 'a new window');
    await limiter.reset('b');
    assert.equal(await limiter.blocked('b', t + 2_000), 0);
  });

  it('token buckets: a burst, then one request per 1/rate s, each key apart; a refusal costs nothing', async () => {
    const rates = new TokenBuckets(h.stack.knex, `test-${randomUUID()}`, 2, 4); // 2 a second, bursts of 4
    const t = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 4; i++) assert.equal(await rates.take('a', t), 0, `request ${i + 1} of the burst`);
    assert.equal(await rates.take('a', t), 1, 'the fifth waits: one token comes in half a second, said as 1 s');
    assert.equal(await rates.take('b', t), 0, 'another key has its own bucket');
    assert.equal(await rates.take('a', t + 499), 1, 'not yet refilled');
    assert.equal(await rates.take('a', t + 500), 0, 'one token after 1/rate s');
    for (let i = 0; i < 5; i++) assert.equal(await rates.take('a', t + 500), 1, 'refused while empty');
    assert.equal(await rates.take('a', t + 1000), 0, 'refusals did not dig the bucket deeper');
    const later = t + 60_000; // a minute idle: full again, but only to the burst
    for (let i = 0; i < 4; i++) assert.equal(await rates.take('a', later), 0);
    assert.equal(await rates.take('a', later), 1);
  });

  it('two web processes share one API key budget: the requests over it are refused by either', async () => {
    const { workspace, key } = await createTestWorkspace(h);
    const agent = await createLiveAgent(h, workspace.id, { name: 'rate', nodes: [{ kind: 'input', id: 'in' }] });
    // 1 a second in bursts of 10: twenty requests at once, alternating between the two, let ten through in all.
    const budgetScope = `${randomUUID()}:`; // one deployment
    const [a, b] = await Promise.all([
      startApi(h, { apiRateLimit: 1, budgetScope }),
      startApi(h, { apiRateLimit: 1, budgetScope }),
    ]);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${(i % 2 ? a : b).url}/v1/agents/${agent.id}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        statuses.push(res.status);
      }
      const ok = statuses.filter((s) => s === 200).length;
      // Counted per process it would be 20: ten for each. A token or two may refill while they are sent.
      assert.ok(ok >= 10 && ok <= 13, `${ok} of 20 let through: ${statuses}`);
      assert.equal(statuses.filter((s) => s === 429).length, 20 - ok);
      assert.ok(
        statuses.slice(-4).every((s) => s === 429),
        'the last ones are refused by both',
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
