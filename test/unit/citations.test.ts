import assert from 'node:assert/strict';
import { citedPassageIds, withoutCitations } from '../../activities/sources/citations';

describe('citation markers in model answers', () => {
  it('finds [P<id>] markers anywhere in a text or structured answer, each once', () => {
    assert.deepEqual(citedPassageIds({ text: 'A [P12] and B [P7] and A again [P12].' }), ['12', '7']);
    assert.deepEqual(citedPassageIds({ total: 3, notes: ['paid [P3]', { why: 'late [P40]' }] }), ['3', '40']);
    assert.deepEqual(citedPassageIds({ text: 'see [12] and [P] and P12' }), []);
  });

  it('removes only the markers of dropped ids, in every string, keeping the shape of the answer', () => {
    const answer = { text: 'Biscuit [P1], loves balls [P9].', items: [{ n: 2, why: 'x [P9]' }], ok: true };
    assert.deepEqual(withoutCitations(answer, new Set(['9'])), {
      text: 'Biscuit [P1], loves balls.',
      items: [{ n: 2, why: 'x' }],
      ok: true,
    });
    assert.equal(withoutCitations(answer, new Set()), answer);
  });
});
