// moto's S3 server with its IAM authentication on: an IAM user with an S3 policy and an access key is made while
// moto still answers unsigned requests, then every request must be signed with a key it issued, so a wrong secret
// is refused as Amazon S3 refuses it (403 SignatureDoesNotMatch).
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startPyServer, type PyServer } from './pyserver';

export interface MotoS3 {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A client with those credentials, to set up and inspect buckets as their owner. */
  admin: S3Client;
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** An IAM query-API call; moto routes it to IAM by the service named in the (unchecked, while auth is off) scope. */
async function iam(url: string, params: Record<string, string>): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization:
        'AWS4-HMAC-SHA256 Credential=AKIDSETUP/20240101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
    },
    body: new URLSearchParams({ ...params, Version: '2010-05-08' }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`moto IAM ${params.Action} answered ${res.status}: ${text.slice(0, 500)}`);
  return text;
}

const tag = (xml: string, name: string) => {
  const m = new RegExp(`<${name}>([^<]+)</${name}>`).exec(xml);
  if (!m) throw new Error(`moto's answer has no <${name}>: ${xml.slice(0, 500)}`);
  return m[1];
};

export async function startMotoS3(): Promise<MotoS3> {
  const server: PyServer = await startPyServer('moto_server', (port) => ['-H', '127.0.0.1', '-p', String(port)]);
  try {
    await iam(server.url, { Action: 'CreateUser', UserName: 'cadre' });
    await iam(server.url, {
      Action: 'PutUserPolicy',
      UserName: 'cadre',
      PolicyName: 's3-all',
      PolicyDocument: JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }],
      }),
    });
    const key = await iam(server.url, { Action: 'CreateAccessKey', UserName: 'cadre' });
    // From here on moto checks every request's signature and the user's policy.
    const auth = await fetch(`${server.url}/moto-api/reset-auth`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '0',
    });
    if (!auth.ok) throw new Error(`moto did not turn its authentication on: ${auth.status} ${await auth.text()}`);
    const accessKeyId = tag(key, 'AccessKeyId');
    const secretAccessKey = tag(key, 'SecretAccessKey');
    const admin = new S3Client({
      region: 'us-east-1',
      endpoint: server.url,
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey },
    });
    return {
      endpoint: server.url,
      accessKeyId,
      secretAccessKey,
      admin,
      createBucket: async (name) => void (await admin.send(new CreateBucketCommand({ Bucket: name }))),
      async stop() {
        admin.destroy();
        await server.stop();
      },
    };
  } catch (err) {
    await server.stop();
    throw new Error(`${(err as Error).message}\nmoto said:\n${server.output().slice(-3000)}`);
  }
}
