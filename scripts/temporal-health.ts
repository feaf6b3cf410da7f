// Is the embedded Temporal dev server serving? Asked with gRPC's standard health check over node:http2, as
// `temporal operator cluster health` asks it, so that the supervisor waits for Temporal without loading the Temporal
// SDK (gRPC and protobuf libraries: about 20 MB it would hold for as long as it runs).
import http2 from 'node:http2';

const workflowService = 'temporal.api.workflowservice.v1.WorkflowService';
const SERVING = 1; // grpc.health.v1.HealthCheckResponse.ServingStatus

/** One gRPC message frame: not compressed, its length, then the message. */
function grpcFrame(message: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

/** Resolves once the frontend at `address` (host:port, no TLS) answers SERVING for the workflow service. */
export function temporalServing(address: string, timeoutMs = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    const done = (err?: Error) => {
      session.destroy();
      if (err) reject(err);
      else resolve();
    };
    session.once('error', done);
    session.setTimeout(timeoutMs, () => done(new Error(`no answer from ${address} within ${timeoutMs / 1000} s`)));
    const request = session.request({
      ':method': 'POST',
      ':path': '/grpc.health.v1.Health/Check',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    let grpcStatus: string | undefined;
    request.on('response', (headers) => (grpcStatus = headers['grpc-status'] as string | undefined));
    request.on('trailers', (trailers) => (grpcStatus = trailers['grpc-status'] as string | undefined));
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('error', done);
    request.once('end', () => {
      if (grpcStatus !== '0') return done(new Error(`health check answered gRPC status ${grpcStatus ?? 'none'}`));
      // HealthCheckResponse { ServingStatus status = 1; }: field 1 as a varint (tag 0x08), absent when 0 (UNKNOWN).
      const message = Buffer.concat(chunks).subarray(5);
      const status = message[0] === 0x08 ? message[1] : 0;
      done(status === SERVING ? undefined : new Error(`the workflow service is not serving yet (status ${status})`));
    });
    // HealthCheckRequest { string service = 1; }: tag 0x0a, length, the name.
    const service = Buffer.from(workflowService);
    request.end(grpcFrame(Buffer.concat([Buffer.from([0x0a, service.length]), service])));
  });
}
