// Blocks tool calls to private, loopback, link-local and cloud-metadata addresses, so an agent cannot be
// steered into the operator's internal network. Hosts listed in CADRE_HTTP_ALLOW_HOSTS are let through.
import dns from 'node:dns/promises';
import net from 'node:net';

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, includes the 169.254.169.254 metadata service
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 128],
  ['::1', 128],
  ['::', 96], // IPv4-compatible addresses such as ::127.0.0.1
  ['64:ff9b::', 96], // NAT64: reaches IPv4 addresses through a gateway
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv6');
}

export class BlockedAddressError extends Error {}

function isBlocked(address: string): boolean {
  const family = net.isIPv6(address) ? 'ipv6' : 'ipv4';
  const mapped = family === 'ipv6' && /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return blocked.check(mapped[1], 'ipv4');
  return blocked.check(address, family);
}

/** Resolves the URL's host and refuses it when any of its addresses is internal. */
export async function assertPublicUrl(url: URL, allowHosts: readonly string[]): Promise<void> {
  if (!['http:', 'https:'].includes(url.protocol))
    throw new BlockedAddressError(`only http and https URLs are allowed, not ${url.protocol}`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const allowed = allowHosts.map((h) => h.toLowerCase());
  if (allowed.includes(host) || allowed.includes(url.host)) return;
  const addresses = net.isIP(host) ? [host] : (await dns.lookup(host, { all: true })).map((a) => a.address);
  const bad = addresses.find(isBlocked);
  if (bad) {
    throw new BlockedAddressError(
      `${host} resolves to ${bad}, a private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS to allow it`,
    );
  }
}

/** The same rule for a host and port that is not a URL (a database server a connection names). */
export function assertPublicHost(host: string, port: number, allowHosts: readonly string[]): Promise<void> {
  return assertPublicUrl(new URL(`http://${net.isIPv6(host) ? `[${host}]` : host}:${port}`), allowHosts);
}
