// The S3 tools: listing, downloading into the run and uploading the run's files, each within the connection's
// prefix. Keys go in and come out relative to it, so what an agent sees is what it can name, and nothing else.
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import { relativeKey } from '../../../model/connectors/s3';
import type { ToolContext } from '../../tools/tool-context';
import { placeOf, s3Call, s3ClientOf, s3Failure, type S3Connection } from './client';

const refused = (message: string, type = 'S3Refused') => ApplicationFailure.nonRetryable(message, type);

/** The bucket key of a key relative to the connection's prefix, checked again here (a handler's own guard). */
export function fullKey(c: S3Connection, key: string): string {
  const checked = relativeKey.safeParse(key);
  if (!checked.success)
    throw refused(`"${key}" is not a key of connection "${c.name}": ${checked.error.issues[0].message}`);
  return c.config.prefix + key;
}

/** A listing's prefix below the connection's: may be empty or end in "/", but never climbs. */
function listPrefix(c: S3Connection, prefix: string): string {
  if (prefix === '') return c.config.prefix;
  return fullKey(c, prefix);
}

const relative = (c: S3Connection, key: string) => key.slice(c.config.prefix.length);
const maxBytes = (c: S3Connection) => c.config.max_file_mb * 1024 * 1024;

export async function listObjects(
  c: S3Connection,
  input: { prefix: string; recursive: boolean; limit: number; next_token?: string },
) {
  const client = await s3ClientOf(c);
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const page = await s3Call(c, `list ${placeOf(c, input.prefix)}`, () =>
    client.send(
      new ListObjectsV2Command({
        Bucket: c.config.bucket,
        Prefix: listPrefix(c, input.prefix),
        Delimiter: input.recursive ? undefined : '/',
        MaxKeys: input.limit,
        ContinuationToken: input.next_token,
      }),
    ),
  );
  return {
    objects: (page.Contents ?? []).map((o) => ({
      key: relative(c, o.Key!),
      size: o.Size ?? 0,
      last_modified: o.LastModified?.toISOString() ?? null,
      etag: o.ETag ?? null,
    })),
    ...(input.recursive ? {} : { folders: (page.CommonPrefixes ?? []).map((p) => relative(c, p.Prefix!)) }),
    next_token: page.IsTruncated ? (page.NextContinuationToken ?? null) : null,
  };
}

/** Reads a body up to `limit` bytes; a larger one is cut off and refused rather than held in memory. */
async function readCapped(body: Readable, limit: number, tooLarge: () => Error): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export async function downloadObject(c: S3Connection, input: { key: string; file_name?: string }, ctx: ToolContext) {
  if (!ctx.saveFile) throw refused('s3.download needs a run to save the file into', 'NoRun');
  const key = fullKey(c, input.key);
  const doing = `download ${placeOf(c, input.key)}`;
  const tooLarge = (size?: number) =>
    refused(
      `${placeOf(c, input.key)} is ${size ? `${(size / 1024 / 1024).toFixed(1)} MB` : 'larger than allowed'}; connection "${c.name}" downloads at most ${c.config.max_file_mb} MB (max_file_mb)`,
      'S3TooLarge',
    );
  const client = await s3ClientOf(c);
  const { GetObjectCommand } = await import('@aws-sdk/client-s3');
  const object = await s3Call(c, doing, () => client.send(new GetObjectCommand({ Bucket: c.config.bucket, Key: key })));
  const body = object.Body as Readable;
  if ((object.ContentLength ?? 0) > maxBytes(c)) {
    body.destroy();
    throw tooLarge(object.ContentLength);
  }
  const content = await readCapped(body, maxBytes(c), () => tooLarge()).catch((err) => {
    throw s3Failure(c, err, doing);
  });
  const saved = await ctx.saveFile({
    name: input.file_name ?? path.posix.basename(key),
    contentType: object.ContentType ?? 'application/octet-stream',
    content,
  });
  return { ...saved, key: input.key, etag: object.ETag ?? null };
}

/** The metadata an upload leaves on its object: which step put it there, so a retry of that step recognises it. */
const stepMark = (ctx: ToolContext) => createHash('sha256').update(ctx.idempotencyKey).digest('hex').slice(0, 32);

export async function uploadObject(
  c: S3Connection,
  input: { file: string; key: string; content_type?: string; overwrite: boolean },
  ctx: ToolContext,
) {
  if (!c.config.allow_writes)
    throw refused(
      `connection "${c.name}" is read-only: an admin can allow uploads in Integrations (allow_writes)`,
      'S3ReadOnly',
    );
  if (!ctx.readFile) throw refused('s3.upload needs a run whose files it uploads', 'NoRun');
  const file = await ctx.readFile(input.file);
  if (!file)
    throw refused(`this run has no file "${input.file}": give the file_id or name a previous step answered`, 'NoFile');
  if (file.content.length > maxBytes(c))
    throw refused(
      `"${file.name}" is ${(file.content.length / 1024 / 1024).toFixed(1)} MB; connection "${c.name}" uploads at most ${c.config.max_file_mb} MB (max_file_mb)`,
      'S3TooLarge',
    );
  const relativeTarget = input.key.endsWith('/') ? input.key + file.name : input.key;
  const key = fullKey(c, relativeTarget);
  const place = placeOf(c, relativeTarget);
  const mark = stepMark(ctx);
  const client = await s3ClientOf(c);
  const { HeadObjectCommand, PutObjectCommand } = await import('@aws-sdk/client-s3');
  const answer = { key: relativeTarget, size: file.content.length, file_id: file.id };

  // A retried step whose upload got through finds its own mark on the object and does not put it again (in a
  // versioned bucket that would be a second version). Someone else's object is replaced only when asked to.
  const existing = await client
    .send(new HeadObjectCommand({ Bucket: c.config.bucket, Key: key }))
    .catch((err: unknown) => {
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
      throw s3Failure(c, err, `look at ${place}`);
    });
  if (existing?.Metadata?.['cadre-step'] === mark) return { ...answer, etag: existing.ETag ?? null };
  if (existing && !input.overwrite)
    throw refused(`${place} exists already: set overwrite to replace it, or choose another key`, 'S3Exists');

  const put = await s3Call(c, `upload to ${place}`, () =>
    client.send(
      new PutObjectCommand({
        Bucket: c.config.bucket,
        Key: key,
        Body: file.content,
        ContentType: input.content_type ?? file.contentType,
        Metadata: { 'cadre-step': mark },
        // Without overwrite, an object that appeared since the look above is not replaced either.
        IfNoneMatch: input.overwrite ? undefined : '*',
      }),
    ),
  );
  return { ...answer, etag: put.ETag ?? null };
}
