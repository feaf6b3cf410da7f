// The Inbox's rules that need no I/O: an agent's address, and how a reply joins its thread (RFC 5322 §3.6.4).

/**
 * A readable, stable local part: the agent's name as a slug plus the start of its id, so two agents of the same
 * name still differ ("invoice-desk-3f9a1c2e"). Stored once made, so renaming the agent keeps its address.
 */
export function inboxLocalPart(agent: { id: string; name: string }): string {
  const slug = agent.name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  const id = agent.id.replace(/-/g, '').slice(0, 8).toLowerCase();
  return slug ? `${slug}-${id}` : `agent-${id}`;
}

/** The id prefix a local part made by inboxLocalPart ends with, to find an agent whose address is not stored yet. */
export function idPrefixOfLocalPart(localPart: string): string | undefined {
  return /-([0-9a-f]{8})$/.exec(localPart.toLowerCase())?.[1];
}

export function splitAddress(address: string): { local: string; domain: string } | undefined {
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return undefined;
  return { local: address.slice(0, at).toLowerCase(), domain: address.slice(at + 1).toLowerCase() };
}

/** "Re: <subject>", without piling up "Re: Re: …". */
export function replySubject(subject: string): string {
  return /^re:/i.test(subject.trim()) ? subject.trim() : `Re: ${subject.trim()}`;
}

/**
 * The headers of a reply to the thread's messages (oldest first): In-Reply-To the last inbound one, References the
 * chain of Message-IDs the thread has seen (the last message's own references, then the ids, without repeats).
 */
export function replyHeaders(
  thread: { message_id: string; references: string[]; direction: 'inbound' | 'outbound' }[],
): { inReplyTo: string; references: string[] } | undefined {
  const lastInbound = [...thread].reverse().find((m) => m.direction === 'inbound');
  if (!lastInbound) return undefined;
  const chain: string[] = [];
  for (const m of thread) for (const id of [...m.references, m.message_id]) if (!chain.includes(id)) chain.push(id);
  return { inReplyTo: lastInbound.message_id, references: chain };
}

/** A Message-ID from a tool call's idempotency key: a retried send carries the same id. */
export function replyMessageId(idempotencyKey: string, domain: string): string {
  return `<${idempotencyKey.replace(/[^\w.-]/g, '.')}@${domain}>`;
}

/** The RFC 8601 result words Cadre records for SPF, DKIM and DMARC when it verifies a message it received. */
export const authenticationResults = [
  'pass',
  'fail',
  'softfail',
  'neutral',
  'none',
  'temperror',
  'permerror',
  'policy',
] as const;
export type AuthenticationResult = (typeof authenticationResults)[number];

/** Cadre's own verdict on who sent a message (services/inbox/authentication.ts). */
export interface MailVerdict {
  spf: AuthenticationResult;
  dkim: AuthenticationResult;
  dmarc: AuthenticationResult;
  /** The Authentication-Results header value Cadre wrote, unfolded; null when verification gave up. */
  authentication_results: string | null;
}

/**
 * Whether a machine sent the message, by the headers that say so: `Auto-Submitted` other than `no` (RFC 3834: an
 * auto-reply, a notification, a bounce) or `Precedence: bulk | list | junk` (a mailing list, a newsletter, an old
 * responder's vacation notice). The header as it said so, lower case ("auto-submitted: auto-replied"), else null.
 * Cadre sends no reply to such a message.
 */
export function machineSent(autoSubmitted: string | null | undefined, precedence: string | null | undefined) {
  const first = (v: string | null | undefined) =>
    (v ?? '')
      .split(/[;\s]/)
      .find((w) => w.length > 0)
      ?.toLowerCase();
  const auto = first(autoSubmitted);
  if (auto && auto !== 'no') return `auto-submitted: ${auto}`;
  const bulk = first(precedence);
  if (bulk && ['bulk', 'list', 'junk'].includes(bulk)) return `precedence: ${bulk}`;
  return null;
}

/** How Cadre marks the replies its agents send (RFC 3834), so other responders do not answer them in turn. */
export const replyAutoSubmitted = 'auto-replied';

/** The most replies an agent sends in one thread within an hour: beyond, a reply is withheld (a loop, most likely). */
export const maxRepliesPerThreadPerHour = 5;
