// An S3 client per connection (@aws-sdk/client-s3), and S3's errors as step failures a person can act on. Every
// connection the client opens goes to a checked address (ssrf-guard's agents): the host it really contacts (the
// endpoint, or the bucket's virtual host under it) must be public unless the operator allows it.
import type { S3Client } from '@aws-sdk/client-s3';
import { ApplicationFailure } from '@temporalio/common';
import type { s3Connector } from '../../../model/connectors/s3';
import { blockedCause, guardedAgents } from '../../tools/ssrf-guard';
import { clientCache, type OpenedConnection } from '../connector';

export type S3Connection = OpenedConnection<typeof s3Connector>;

/** The SDK, loaded with the first client: a service that never reaches S3 does not hold it. */
let sdk: typeof import('@aws-sdk/client-s3') | undefined;

async function openClient(c: S3Connection): Promise<S3Client> {
  sdk ??= await import('@aws-sdk/client-s3');
  const client = new sdk.S3Client({
    region: c.config.region,
    endpoint: c.config.endpoint,
    forcePathStyle: c.config.force_path_style,
    credentials: {
      accessKeyId: c.credentials.access_key_id,
      secretAccessKey: c.credentials.secret_access_key,
      sessionToken: c.credentials.session_token,
    },
    // The SDK's own retries back off on throttling (503 SlowDown) and passing faults before the step fails.
    maxAttempts: 3,
    requestHandler: {
      connectionTimeout: 10_000,
      requestTimeout: 60_000,
      httpAgent: guardedAgents(c.limits.allowHosts).http,
      httpsAgent: guardedAgents(c.limits.allowHosts).https,
    },
  });
  return client;
}

const clients = clientCache<S3Client>((client) => client.destroy());
export const s3ClientOf = (c: S3Connection) => clients(c.version, () => openClient(c));

const httpStatus = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/** Where a connection points, for messages: `s3://bucket/prefix`. */
export const placeOf = (c: S3Connection, key = '') => `s3://${c.config.bucket}/${c.config.prefix}${key}`;

/**
 * S3's answer as a step failure: passing faults (unreachable, 5xx, throttling) retry; the rest say what to change.
 * S3 messages name no secret, and the access key is not repeated here.
 */
export function s3Failure(c: S3Connection, err: unknown, doing: string): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const blocked = blockedCause(err);
  if (blocked) return ApplicationFailure.nonRetryable(`connection "${c.name}": ${blocked.message}`, 'BlockedAddress');
  const status = httpStatus(err);
  const code = sdk && err instanceof sdk.S3ServiceException ? err.name : undefined;
  const what = `connection "${c.name}" could not ${doing}`;
  if (status === undefined || status >= 500 || status === 429 || code === 'SlowDown')
    return ApplicationFailure.retryable(
      `${what}: ${status ? `S3 answered ${status}${code ? ` ${code}` : ''}` : (err as Error).message}`,
      'S3Unavailable',
    );
  const reason = (() => {
    switch (code) {
      case 'NoSuchBucket':
        return `the bucket "${c.config.bucket}" does not exist${c.config.endpoint ? '' : ` in ${c.config.region}`}: check its name and region`;
      case 'InvalidAccessKeyId':
      case 'SignatureDoesNotMatch':
      case 'InvalidToken':
      case 'ExpiredToken':
        return `S3 refused its credentials (${status} ${code}): check the access key and secret, and reconnect it in Integrations`;
      case 'AccessDenied':
        return `its credentials may not do that in ${placeOf(c)} (403 AccessDenied): allow it in the bucket's or the key's policy`;
      case 'PermanentRedirect':
      case 'AuthorizationHeaderMalformed':
        return `the bucket is in another region than "${c.config.region}" (${code}): set the connection's region`;
      case 'NoSuchKey':
      case 'NotFound':
        return 'there is no such object';
      case 'PreconditionFailed':
        return 'an object is already at that key';
      default:
        return `S3 answered ${status}${code ? ` ${code}` : ''}: ${(err as Error).message.slice(0, 300)}`;
    }
  })();
  return ApplicationFailure.nonRetryable(`${what}: ${reason}`, code === 'AccessDenied' ? 'S3Denied' : 'S3Refused');
}

/** Runs one S3 call, its failure turned into a step failure. */
export async function s3Call<T>(c: S3Connection, doing: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw s3Failure(c, err, doing);
  }
}
