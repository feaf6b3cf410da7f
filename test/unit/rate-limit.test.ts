import assert from 'node:assert/strict';
import { TokenBuckets } from '../../api/rate-limit';

describe('TokenBuckets (the API key request rate)', () => {
  it('lets a burst through, then one request per 1/rate s, each key apart', () => {
    const rates = new TokenBuckets(2, 4); // 2 a second, bursts of 4
    const t = 1_000_000;
    for (let i = 0; i < 4; i++) assert.equal(rates.take('a', t), 0, `request ${i + 1} of the burst`);
    assert.equal(rates.take('a', t), 1, 'the fifth waits: one token comes in half a second, said as 1 s');
    assert.equal(rates.take('b', t), 0, 'another key has its own bucket');
    assert.equal(rates.take('a', t + 499), 1, 'not yet refilled');
    assert.equal(rates.take('a', t + 500), 0, 'one token after 1/rate s');
    assert.equal(rates.take('a', t + 500), 1);
  });

  it('refills to the burst, never beyond, and a refused request costs nothing', () => {
    const rates = new TokenBuckets(1, 3);
    const t = 5_000_000;
    for (let i = 0; i < 3; i++) rates.take('k', t);
    for (let i = 0; i < 5; i++) assert.equal(rates.take('k', t), 1, 'refused while empty');
    assert.equal(rates.take('k', t + 1000), 0, 'refusals did not dig the bucket deeper');
    const later = t + 60_000; // a minute idle: full again, but only to the burst
    for (let i = 0; i < 3; i++) assert.equal(rates.take('k', later), 0);
    assert.equal(rates.take('k', later), 1);
  });
});
