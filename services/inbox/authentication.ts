// Cadre's own SPF, DKIM and DMARC verdict on a message its SMTP listener received, by mailauth: the connecting
// address and MAIL FROM against the sender domain's SPF record, each DKIM signature against its key, and the From
// domain's DMARC policy against both. A sender can write any Authentication-Results header it likes; this one is
// what Cadre found. Every DNS lookup is bounded in time, and so is the whole verification: a machine without DNS
// records temperror and takes the message all the same. The verdict is recorded and shown; it never refuses mail.
import { Resolver } from 'node:dns/promises';
import type { AuthenticateResult, DNSResolver } from 'mailauth';
import { authenticationResults, type AuthenticationResult, type MailVerdict } from '../../model/inbox';

/** A DNS lookup as mailauth asks for it: TXT answers as arrays of strings, MX as objects, A/AAAA as strings. */
export type DnsResolver = (name: string, rrtype: string) => Promise<unknown>;

export interface VerifyOptions {
  /** The connecting client's address, its EHLO name, and the MAIL FROM address (absent for a bounce). */
  ip: string;
  helo?: string;
  sender?: string;
  /** This server's name in the header: the Inbox's domain. */
  mta: string;
  resolver?: DnsResolver;
  /** How long one DNS lookup, and the whole verification, may take. */
  lookupTimeoutMs?: number;
  timeoutMs?: number;
}

export const defaultLookupTimeoutMs = 3_000;
export const defaultVerifyTimeoutMs = 10_000;

const systemResolver = new Resolver({ timeout: 1_500, tries: 2 });
const systemLookup: DnsResolver = (name, rrtype) => systemResolver.resolve(name, rrtype);

/**
 * The resolver with a deadline on each lookup. A lookup past it fails as ETIMEOUT, which mailauth reads as a
 * temporary DNS error (temperror) rather than as a missing record.
 */
export function boundedResolver(resolver: DnsResolver, timeoutMs: number): DnsResolver {
  return (name, rrtype) => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error(`DNS lookup of ${rrtype} ${name} timed out`), { code: 'ETIMEOUT' })),
        timeoutMs,
      );
    });
    return Promise.race([resolver(name, rrtype), deadline]).finally(() => clearTimeout(timer));
  };
}

const temporary: MailVerdict = {
  spf: 'temperror',
  dkim: 'temperror',
  dmarc: 'temperror',
  authentication_results: null,
};

/** One of the words Cadre records: mailauth's own, with its short `temperr` spelled out and anything else `none`. */
function word(result: string | undefined): AuthenticationResult {
  if (result === 'temperr') return 'temperror';
  return (authenticationResults as readonly string[]).includes(result ?? '')
    ? (result as AuthenticationResult)
    : 'none';
}

/**
 * A signature whose body hash does not match, mailauth (like Gmail) reports as `neutral`; RFC 6376 §6.1.3 makes it
 * a PERMFAIL, `fail` in Authentication-Results, as OpenDKIM and rspamd report it: the body changed after it was
 * signed, which is what a reviewer needs to see.
 */
const bodyHashMismatch = 'body hash did not verify';

function dkimWord(status: { result?: string; comment?: string | boolean }): AuthenticationResult {
  return status.result === 'neutral' && status.comment === bodyHashMismatch ? 'fail' : word(status.result);
}

/**
 * The verdict in mailauth's answer. Of several DKIM signatures the message passes if any passes (a mailing list
 * adds its own beside the author's), else it fails if any fails, else it takes the first one's result.
 */
export function verdictOf(result: Pick<AuthenticateResult, 'spf' | 'dkim' | 'dmarc' | 'headers'>): MailVerdict {
  const signatures = (result.dkim?.results ?? []).map((r) => dkimWord(r.status));
  const dkim = signatures.includes('pass') ? 'pass' : signatures.includes('fail') ? 'fail' : (signatures[0] ?? 'none');
  // The header as one line (RFC 5322 unfolding): `<mta>; dkim=… ; spf=… ; dmarc=…`.
  const header = /^Authentication-Results:[ \t]*(.*(?:\r?\n[ \t].*)*)/im
    .exec(result.headers ?? '')?.[1]
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();
  return {
    spf: result.spf ? word(result.spf.status.result) : 'none',
    dkim,
    dmarc: result.dmarc ? word(result.dmarc.status.result) : 'none',
    authentication_results: header
      ? header.replaceAll(`dkim=neutral (${bodyHashMismatch})`, `dkim=fail (${bodyHashMismatch})`)
      : null,
  };
}

/** Cadre's verdict on a raw message; never throws: a verification that fails or runs out of time is temperror. */
export async function verifyMessage(
  raw: Buffer,
  options: VerifyOptions,
  onError?: (err: unknown) => void,
): Promise<MailVerdict> {
  const { authenticate } = await import('mailauth'); // loaded on first use, before the verification's clock starts
  const resolver = boundedResolver(options.resolver ?? systemLookup, options.lookupTimeoutMs ?? defaultLookupTimeoutMs);
  let timer: NodeJS.Timeout | undefined;
  let gaveUp = false;
  const deadline = new Promise<MailVerdict>((resolve) => {
    timer = setTimeout(() => {
      gaveUp = true;
      onError?.(new Error('verifying SPF, DKIM and DMARC took too long'));
      resolve(temporary);
    }, options.timeoutMs ?? defaultVerifyTimeoutMs);
  });
  const verification = authenticate(raw, {
    // An IPv4 client on a dual-stack socket shows as ::ffff:a.b.c.d; SPF records name it as a.b.c.d.
    ip: options.ip.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, ''),
    helo: options.helo,
    sender: options.sender || undefined,
    mta: options.mta,
    resolver: resolver as DNSResolver,
    // BIMI (a brand's logo) is no part of whether the sender is who it claims to be.
    disableBimi: true,
  }).then(verdictOf, (err: unknown) => {
    if (!gaveUp) onError?.(err); // once given up, what the verification still does is of no interest
    return temporary;
  });
  try {
    return await Promise.race([verification, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
