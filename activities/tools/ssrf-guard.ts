// Keeps outbound connections out of the operator's internal network, so an agent or a connection a tenant sets up
// cannot reach private, loopback, link-local or cloud-metadata addresses. The check is made on the address that is
// actually connected to: each connection resolves its host once, here, checks every address, and connects to the
// one checked (a DNS name that answers a public address first and 127.0.0.1 next gets no second question). HTTP
// clients get a dispatcher or agent that does this for every connection they open, redirects included; clients of
// other protocols get the checked address to connect to, and keep the name for TLS.
//
// CADRE_HTTP_ALLOW_HOSTS lets the operator through to internal hosts: a name (`crm.internal`, or `name:port`) is
// allowed whatever it resolves to; an address or a range (`10.0.5.7`, `10.0.5.0/24`) is allowed whatever name
// leads there.
import dns, { type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Agent as UndiciAgent } from 'undici';

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

export class BlockedAddressError extends Error {
  /** Kept by clients that copy a socket error's code and drop the error (node-fetch, under HubSpot's client). */
  readonly code = 'ERR_CADRE_BLOCKED_ADDRESS';
}

const familyOf = (address: string) => (net.isIPv6(address) ? 'ipv6' : 'ipv4');
/** `::ffff:127.0.0.1` is 127.0.0.1. */
const unmapped = (address: string) => /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address;
const bare = (host: string) => host.replace(/^\[|\]$/g, '').toLowerCase();

/** The allow list, split into names (with or without a port) and addresses or ranges. */
interface AllowList {
  names: Set<string>;
  addresses: net.BlockList;
}
const allowLists = new WeakMap<readonly string[], AllowList>();

function allowListOf(allowHosts: readonly string[]): AllowList {
  let list = allowLists.get(allowHosts);
  if (list) return list;
  list = { names: new Set(), addresses: new net.BlockList() };
  for (const entry of allowHosts.map((h) => h.trim().toLowerCase()).filter(Boolean)) {
    const [address, bits] = bare(entry).split('/');
    if (net.isIP(address)) {
      const family = familyOf(address);
      if (bits === undefined) list.addresses.addAddress(address, family);
      else list.addresses.addSubnet(address, Number(bits), family);
    }
    list.names.add(entry);
  }
  allowLists.set(allowHosts, list);
  return list;
}

function hostAllowed(host: string, port: number | undefined, allowHosts: readonly string[]): boolean {
  const { names } = allowListOf(allowHosts);
  const name = bare(host);
  const withPort = net.isIPv6(name) ? `[${name}]:${port}` : `${name}:${port}`;
  return names.has(name) || (port !== undefined && names.has(withPort));
}

function addressRefused(address: string, allowHosts: readonly string[]): boolean {
  const plain = unmapped(address);
  const family = familyOf(plain);
  return blocked.check(plain, family) && !allowListOf(allowHosts).addresses.check(plain, family);
}

const refusal = (host: string, address: string) =>
  new BlockedAddressError(
    `${bare(host)} resolves to ${address}, a private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS to allow it`,
  );

/**
 * The addresses a connection to `host` may use: `host` resolved once and every address checked (an internal one
 * refuses the host, as a name with a public and a private address could be answered either way). An address
 * literal is checked as it is.
 */
export function resolvePublic(host: string, port: number | undefined, allowHosts: readonly string[]) {
  const name = bare(host);
  return new Promise<LookupAddress[]>((resolve, reject) => {
    const checked = (addresses: LookupAddress[]) => {
      if (addresses.length === 0) return reject(new Error(`${name} has no address`));
      if (!hostAllowed(name, port, allowHosts)) {
        const bad = addresses.find((a) => addressRefused(a.address, allowHosts));
        if (bad) return reject(refusal(name, bad.address));
      }
      resolve(addresses);
    };
    if (net.isIP(name)) return checked([{ address: name, family: net.isIP(name) }]);
    // Through the module object, so the one resolver in use (the system's, or a test's) answers.
    dns.lookup(name, { all: true }, (err, addresses) => (err ? reject(err) : checked(addresses)));
  });
}

/** The checked address to connect to, for clients that take a host (database drivers, mail clients). */
export async function publicAddress(host: string, port: number, allowHosts: readonly string[]): Promise<string> {
  return (await resolvePublic(host, port, allowHosts))[0].address;
}

/** A `lookup` for node's net and tls: the connection's one resolution, checked. */
function guardedLookup(port: number | undefined, allowHosts: readonly string[]): net.LookupFunction {
  return (hostname, options, callback) => {
    resolvePublic(hostname, port, allowHosts).then(
      (addresses) => {
        const fit = options.family ? addresses.filter((a) => a.family === options.family) : addresses;
        if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, fit);
        if (fit.length === 0) return callback(new Error(`${hostname} has no address of that family`), '', 0);
        callback(null, fit[0].address, fit[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

/**
 * An http(s) agent for clients built on node's http module (the AWS SDK, Stripe, HubSpot): every socket it opens,
 * for a redirect too, connects to a checked address. An address literal, which node connects to without a lookup,
 * is checked before.
 */
function guardedNodeAgent<A extends typeof http.Agent>(Base: A, allowHosts: readonly string[]): InstanceType<A> {
  const agent = new Base({ keepAlive: true }) as InstanceType<A>;
  const create = agent.createConnection.bind(agent);
  agent.createConnection = (options, callback) => {
    const host = bare(String(options.host ?? 'localhost'));
    const port = options.port == null ? undefined : Number(options.port);
    if (net.isIP(host) && !hostAllowed(host, port, allowHosts) && addressRefused(host, allowHosts)) {
      const err = refusal(host, host);
      process.nextTick(() => callback?.(err, undefined as never));
      return undefined;
    }
    return create({ ...options, lookup: guardedLookup(port, allowHosts) } as typeof options, callback);
  };
  return agent;
}

const agents = new WeakMap<readonly string[], { http: http.Agent; https: https.Agent }>();

/** The guarded agents for these allowed hosts: `http` for http: URLs, `https` for https: ones. */
export function guardedAgents(allowHosts: readonly string[]): { http: http.Agent; https: https.Agent } {
  let pair = agents.get(allowHosts);
  if (!pair) {
    pair = { http: guardedNodeAgent(http.Agent, allowHosts), https: guardedNodeAgent(https.Agent, allowHosts) };
    agents.set(allowHosts, pair);
  }
  return pair;
}

const dispatchers = new WeakMap<readonly string[], Promise<UndiciAgent>>();

/** An undici dispatcher whose every connection (each redirect's too) goes to a checked address. */
function guardedDispatcher(allowHosts: readonly string[]): Promise<UndiciAgent> {
  let dispatcher = dispatchers.get(allowHosts);
  if (dispatcher) return dispatcher;
  // Loaded on first use: a service that never calls out does not hold it.
  dispatcher = import('undici').then(({ Agent, buildConnector }) => {
    const connect = buildConnector({ timeout: 10_000 });
    return new Agent({
      connect: (options, callback) => {
        const port = options.port ? Number(options.port) : options.protocol === 'https:' ? 443 : 80;
        resolvePublic(options.hostname, port, allowHosts).then(
          // `host` (the Host header's name) stays, and gives TLS its server name.
          ([first]) => connect({ ...options, hostname: first.address }, callback),
          (err: Error) => callback(err, null),
        );
      },
    });
  });
  dispatchers.set(allowHosts, dispatcher);
  return dispatcher;
}

/**
 * The refused address behind a client's own error ("fetch failed", a connection error), when that is what it was:
 * clients keep the socket's error as `cause`, `original` or `detail`, or only its code and message.
 */
export function blockedCause(err: unknown): BlockedAddressError | undefined {
  type Wrapper = Error & { cause?: unknown; original?: unknown; detail?: unknown; code?: unknown };
  for (let e = err as Wrapper | undefined; e instanceof Error; e = (e.cause ?? e.original ?? e.detail) as Wrapper) {
    if (e instanceof BlockedAddressError) return e;
    if (e.code === 'ERR_CADRE_BLOCKED_ADDRESS') return new BlockedAddressError(e.message.replace(/^.*reason: /s, ''));
  }
  return undefined;
}

/**
 * A body undici's fetch takes as node's own fetch would: node's FormData and Blob are other classes to the undici
 * package, so they are encoded here (with their content type, a multipart boundary included).
 */
async function portableBody(init: RequestInit | undefined) {
  if (!(init?.body instanceof FormData || init?.body instanceof Blob)) return {};
  const encoded = new Request('http://encode.invalid/', { method: 'POST', body: init.body });
  const headers = new Headers(init.headers);
  const type = encoded.headers.get('content-type');
  if (type && !headers.has('content-type')) headers.set('content-type', type);
  return { body: Buffer.from(await encoded.arrayBuffer()), headers };
}

/**
 * fetch that reaches only allowed addresses, checked at each connection (redirects included), and only over http or
 * https. A refused address throws BlockedAddressError itself.
 */
export function publicFetch(allowHosts: readonly string[]): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request ? input : undefined;
    const url = new URL(request ? request.url : String(input));
    if (!['http:', 'https:'].includes(url.protocol))
      throw new BlockedAddressError(`only http and https URLs are allowed, not ${url.protocol}`);
    const [{ fetch: undiciFetch }, dispatcher] = await Promise.all([import('undici'), guardedDispatcher(allowHosts)]);
    // A Request of node's own fetch is handed over as its parts: undici's fetch takes its own Request class only.
    const parts = request && {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      duplex: 'half',
    };
    const body = await portableBody(init);
    try {
      return (await undiciFetch(url, { ...parts, ...init, ...body, dispatcher } as never)) as unknown as Response;
    } catch (err) {
      throw blockedCause(err) ?? err;
    }
  };
}

/**
 * Refuses a URL that is not http(s), or whose host resolves to an internal address. For a refusal before any
 * connection (a URL shown back to a person); what connects must use publicFetch, guardedAgents or publicAddress.
 */
export async function assertPublicUrl(url: URL, allowHosts: readonly string[]): Promise<void> {
  if (!['http:', 'https:'].includes(url.protocol))
    throw new BlockedAddressError(`only http and https URLs are allowed, not ${url.protocol}`);
  await resolvePublic(url.hostname, Number(url.port) || (url.protocol === 'https:' ? 443 : 80), allowHosts);
}

/** The same rule for a host and port that is not a URL (a database server a connection names). */
export async function assertPublicHost(host: string, port: number, allowHosts: readonly string[]): Promise<void> {
  await resolvePublic(host, port, allowHosts);
}
