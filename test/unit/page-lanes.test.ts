import assert from 'node:assert/strict';
import { pageLanes } from '../../workflows/page-lanes';

describe('page lanes', () => {
  it("shares the run's concurrency cap among the pages in flight, never exceeding it", () => {
    for (const cap of [1, 2, 3, 4, 5, 10, 50, 97, 500]) {
      for (const pagesLeft of [1, 2, 3, 4, 10]) {
        const lanes = pageLanes(cap, 4, pagesLeft);
        assert.equal(
          lanes.reduce((a, b) => a + b, 0),
          cap,
          `cap ${cap}, ${pagesLeft} pages: all of it, no more`,
        );
        assert.ok(lanes.length <= Math.min(4, pagesLeft, cap));
        assert.ok(lanes.every((n) => n >= 1));
      }
    }
    assert.deepEqual(pageLanes(50, 4, 1), [50], 'one page left: the whole cap');
    assert.deepEqual(pageLanes(50, 4, 10), [13, 13, 12, 12]);
    assert.deepEqual(pageLanes(2, 4, 10), [1, 1], 'a cap of two runs two pages of one');
  });
});
