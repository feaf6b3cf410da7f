// Values a person reads in the console, in words rather than JSON (issue 34): a field's value and a table cell
// (ui/src/lib/format.ts). The pages that show them are checked in the browser suites.
import assert from 'node:assert/strict';
import { fieldText, fieldsLine } from '../../ui/src/lib/format';

describe('values in words, not JSON', () => {
  it('says a list as its entries and a group as name: value pairs, bracketed only inside another', () => {
    assert.equal(fieldText(['finance', 'urgent']), 'finance, urgent');
    assert.equal(fieldText({ payee: 'Acme', amount: 250 }), 'payee: Acme, amount: 250');
    assert.equal(
      fieldText([
        { payee: 'Acme', amount: '250' },
        { payee: 'Globex', paid: true },
      ]),
      '(payee: Acme, amount: 250), (payee: Globex, paid: yes)',
    );
    assert.equal(fieldText({}), '—');
    assert.equal(fieldText([]), '—');
  });

  it('fits any value on one line of a table cell, cut where it is too long', () => {
    assert.equal(fieldsLine({ order: 'A-1', customer: { name: 'Ada' } }), 'order: A-1 · customer: (name: Ada)');
    assert.equal(fieldsLine([{ payee: 'Acme' }]), '(payee: Acme)');
    assert.equal(fieldsLine(null), '—');
    assert.equal(fieldsLine('x'.repeat(50), 10), `${'x'.repeat(9)}…`);
  });
});
