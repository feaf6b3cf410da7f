// The S3 storage connector (model/connectors/s3.ts) with @aws-sdk/client-s3: the check lists the connection's
// prefix with its credentials, as a run would; the tools are in objects.ts, the object.created poller in poller.ts.
import { s3Connector } from '../../../model/connectors/s3';
import { implement } from '../implementation';
import { placeOf, s3Call, s3ClientOf } from './client';
import { downloadObject, listObjects, uploadObject } from './objects';
import { pollCreatedObjects } from './poller';

export const s3Implementation = implement(s3Connector, {
  async check(c) {
    const client = await s3ClientOf(c);
    const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    const page = await s3Call(c, `list ${placeOf(c)}`, () =>
      client.send(new ListObjectsV2Command({ Bucket: c.config.bucket, Prefix: c.config.prefix, MaxKeys: 20 })),
    );
    const host = c.config.endpoint ? new URL(c.config.endpoint).host : undefined;
    return {
      server_version: host ? `S3-compatible storage at ${host}` : `Amazon S3 (${c.config.region})`,
      found: (page.Contents ?? []).map((o) => o.Key!.slice(c.config.prefix.length)),
    };
  },
  handlers: {
    's3.list': (input, c) => listObjects(c, input),
    's3.download': (input, c, ctx) => downloadObject(c, input, ctx),
    's3.upload': (input, c, ctx) => uploadObject(c, input, ctx),
  },
  pollers: { 'object.created': pollCreatedObjects },
});
