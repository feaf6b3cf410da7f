// `npm start` waits for its Temporal dev server with gRPC's health check (scripts/temporal-health.ts), so that the
// supervisor holds no Temporal SDK: it must say yes to a real Temporal only, and no while it is not serving.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { temporalServing } from '../../scripts/temporal-health';
import { testStack } from '../support/global';
import { freePort } from '../support/ports';

/** An HTTP/2 server answering grpc.health.v1.Health/Check with `status` (a HealthCheckResponse.ServingStatus). */
async function healthServer(status: number): Promise<{ address: string; close(): Promise<void> }> {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('data', () => undefined);
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.from([0, 0, 0, 0, 2, 0x08, status]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('the Temporal health probe of npm start (scripts/temporal-health.ts)', () => {
  it('resolves against a running Temporal dev server', async () => {
    const { temporalConfig } = await testStack();
    await temporalServing(temporalConfig.address);
  });

  it('rejects while nothing listens on the port', async () => {
    await assert.rejects(temporalServing(`127.0.0.1:${await freePort()}`), /ECONNREFUSED/);
  });

  it('rejects while the server answers NOT_SERVING, resolves once it answers SERVING', async () => {
    const notServing = await healthServer(2);
    try {
      await assert.rejects(temporalServing(notServing.address), /not serving yet \(status 2\)/);
    } finally {
      await notServing.close();
    }
    const serving = await healthServer(1);
    try {
      await temporalServing(serving.address);
    } finally {
      await serving.close();
    }
  });
});
