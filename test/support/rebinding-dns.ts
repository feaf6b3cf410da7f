// A DNS rebinding attacker's name server, in-process: a name under `.rebind.test` answers `first` to its first lookup
// and `then` to every later one. It answers through node's own resolver functions (dns.lookup and
// dns.promises.lookup), which every client in the process asks unless it is handed an address to connect to; other
// names go to the system's resolver as before.
import dns, { type LookupAddress } from 'node:dns';

export interface RebindingDns {
  /** How many times `name` was looked up. */
  lookups(name: string): number;
  restore(): void;
}

export function rebindingDns(first: string, then: string): RebindingDns {
  const counts = new Map<string, number>();
  const answer = (name: string): LookupAddress[] | undefined => {
    if (!/\.rebind\.test\.?$/i.test(name)) return undefined;
    const n = (counts.get(name) ?? 0) + 1;
    counts.set(name, n);
    return [{ address: n === 1 ? first : then, family: 4 }];
  };
  const original = { lookup: dns.lookup, promisesLookup: dns.promises.lookup };

  const lookup = (name: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    const opts = (typeof options === 'object' && options !== null ? options : {}) as dns.LookupOptions;
    const addresses = answer(name);
    if (!addresses) return (original.lookup as (...args: unknown[]) => void)(name, options, callback);
    process.nextTick(() => (opts.all ? cb(null, addresses) : cb(null, addresses[0].address, addresses[0].family)));
  };
  const promisesLookup = async (name: string, options?: dns.LookupOptions) => {
    const addresses = answer(name);
    if (!addresses) return original.promisesLookup(name, options ?? {});
    return options?.all ? addresses : addresses[0];
  };
  Object.assign(dns, { lookup });
  Object.assign(dns.promises, { lookup: promisesLookup });
  return {
    lookups: (name) => counts.get(name) ?? 0,
    restore() {
      Object.assign(dns, { lookup: original.lookup });
      Object.assign(dns.promises, { lookup: original.promisesLookup });
    },
  };
}
