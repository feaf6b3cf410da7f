// The Inbox's pure rules: agents' addresses and how a reply joins its thread.
import assert from 'node:assert/strict';
import { idPrefixOfLocalPart, inboxLocalPart, replyHeaders, replyMessageId, replySubject } from '../../model/inbox';

describe('Inbox rules', () => {
  it("makes a readable address from the agent's name and the start of its id", () => {
    const id = '3F9A1C2E-0000-4000-8000-000000000000';
    assert.equal(inboxLocalPart({ id, name: 'Invoice Desk (Café) ' }), 'invoice-desk-cafe-3f9a1c2e');
    assert.equal(inboxLocalPart({ id, name: '——' }), 'agent-3f9a1c2e');
    assert.equal(idPrefixOfLocalPart('invoice-desk-cafe-3f9a1c2e'), '3f9a1c2e');
    assert.equal(idPrefixOfLocalPart('postmaster'), undefined);
  });

  it('replies to the last inbound message, referencing the whole chain once', () => {
    const thread = [
      { direction: 'inbound' as const, message_id: '<a@x>', references: [] },
      { direction: 'outbound' as const, message_id: '<b@cadre>', references: ['<a@x>'] },
      { direction: 'inbound' as const, message_id: '<c@x>', references: ['<a@x>', '<b@cadre>'] },
      { direction: 'outbound' as const, message_id: '<d@cadre>', references: ['<a@x>', '<b@cadre>', '<c@x>'] },
    ];
    assert.deepEqual(replyHeaders(thread), {
      inReplyTo: '<c@x>',
      references: ['<a@x>', '<b@cadre>', '<c@x>', '<d@cadre>'],
    });
    assert.equal(replyHeaders([thread[1]]), undefined);
  });

  it('says "Re:" once and derives a stable Message-ID from the call', () => {
    assert.equal(replySubject('Order 42'), 'Re: Order 42');
    assert.equal(replySubject('RE: Order 42'), 'RE: Order 42');
    assert.equal(replyMessageId('run:0:reply', 'inbox.test'), '<run.0.reply@inbox.test>');
  });
});
