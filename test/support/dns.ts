// A DNS of the test's own for the Inbox's SPF/DKIM/DMARC checks: TXT records by name, and for any other name or type
// the answer a real resolver gives for a name that does not exist (ENOTFOUND). Nothing is asked of the network.
import { generateKeyPairSync } from 'node:crypto';
import type { DnsResolver } from '../../services/inbox/authentication';

export interface FakeDns {
  resolver: DnsResolver;
  /** Adds (or replaces) the TXT records of a name. */
  txt(name: string, ...records: string[]): void;
}

export function fakeDns(): FakeDns {
  const txt = new Map<string, string[]>();
  return {
    txt: (name, ...records) => void txt.set(name.toLowerCase(), records),
    resolver: async (name, rrtype) => {
      const records = rrtype === 'TXT' ? txt.get(name.toLowerCase()) : undefined;
      if (!records) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      // As node's resolver answers TXT: each record as its character strings.
      return records.map((r) => [r]);
    },
  };
}

/** A DKIM key pair: the private key for nodemailer's `dkim` option, the TXT record publishing the public one. */
export function dkimKey(): { privateKey: string; record: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    record: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  };
}
