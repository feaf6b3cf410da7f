import net from 'node:net';

/** A port that was free a moment ago (the OS picks it), for servers the tests start. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** `npm start`'s own ports (web, embedded Postgres, Temporal and its UI): a stack someone may be running uses them. */
const stackDefaults = new Set([3000, 5433, 7233, 8233]);

/** `n` free ports, distinct from each other and never `npm start`'s defaults. */
export async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const p = await freePort();
    if (!stackDefaults.has(p) && !ports.includes(p)) ports.push(p);
  }
  return ports;
}
