import type { Knex } from 'knex';

// The Inbox's own verdict on who sent a message (services/inbox/authentication.ts): SPF, DKIM and DMARC as Cadre's SMTP
// listener verified them, beside the headers the message arrived with (a sender may write those itself). Null for a
// message Cadre did not verify: the replies it sent, mail that came another way, mail received before this.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('inbox_messages', (t) => {
    /** RFC 8601 result words: pass, fail, softfail, neutral, none, temperror, permerror, policy. */
    t.text('spf_result');
    t.text('dkim_result');
    t.text('dmarc_result');
    /** The Authentication-Results header value Cadre wrote; null when verification gave up (temperror). */
    t.text('verified_authentication_results');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('inbox_messages', (t) => {
    t.dropColumns('spf_result', 'dkim_result', 'dmarc_result', 'verified_authentication_results');
  });
}
