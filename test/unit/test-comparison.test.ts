// How a test run on past items compares an item with its original: output, route and status, and the summary line.
import assert from 'node:assert/strict';
import { compareOutcomes, sameValue, summarize } from '../../model/test-comparison';

const done = (output: unknown, route: string) => ({ status: 'done', output, route, error: null });

describe('test run comparison', () => {
  it('counts a planned call as giving what the real call gave', () => {
    assert.ok(sameValue({ id: 1, sent: { message_id: 'x' } }, { id: 1, sent: { planned: true, tool: 'email.send' } }));
    assert.ok(!sameValue({ id: 1 }, { id: 2 }));
    assert.ok(!sameValue([1, 2], [1]));
  });

  it('reports output, route and status changes, and says it in one line', () => {
    const diffs = [
      compareOutcomes(done({ id: 'a' }, 'small'), done({ id: 'a' }, 'small')),
      compareOutcomes(done({ id: 'b' }, 'small'), done({ id: 'b' }, 'large')),
      compareOutcomes(done({ id: 'c' }, 'large'), { status: 'failed', output: null, route: 'book', error: 'x' }),
      compareOutcomes(done({ id: 'd' }, 'large'), { status: 'running', output: null, route: 'book', error: null }),
    ];
    assert.deepEqual(diffs[1], {
      output: 'same',
      route: 'changed',
      status: 'same',
      now_fails: false,
      now_passes: false,
    });
    assert.equal(diffs[3], null, 'an item still under way is not compared yet');
    const summary = summarize(diffs);
    assert.equal(summary.text, '2 of 4 items give the same output; 2 route differently; 1 now fails; 1 still running');
    assert.deepEqual([summary.compared, summary.output_changed, summary.now_fail], [3, 1, 1]);
  });
});
