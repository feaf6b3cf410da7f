// "An object was created" by polling: S3 lists by key, not by time, so each poll lists the prefix and reports the
// objects modified after the cursor. The cursor is the newest LastModified seen and the keys modified at that very
// moment (S3's clock has whole seconds, and several objects can share one).
import type { _Object } from '@aws-sdk/client-s3';
import { ApplicationFailure } from '@temporalio/common';
import type { EventBatch } from '../connector';
import { placeOf, s3Call, s3ClientOf, type S3Connection } from './client';

interface Cursor {
  /** The newest LastModified seen, ISO. */
  at: string;
  /** The keys (bucket keys) modified at `at`, already reported. */
  keys: string[];
}

/** A poll lists at most this many objects: a prefix this large should be split (a prefix per connection). */
const maxListed = 100_000;

async function listAll(c: S3Connection): Promise<_Object[]> {
  const client = await s3ClientOf(c);
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  const objects: _Object[] = [];
  let token: string | undefined;
  do {
    const page = await s3Call(c, `list ${placeOf(c)}`, () =>
      client.send(
        new ListObjectsV2Command({ Bucket: c.config.bucket, Prefix: c.config.prefix, ContinuationToken: token }),
      ),
    );
    objects.push(...(page.Contents ?? []));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
    if (objects.length > maxListed)
      throw ApplicationFailure.nonRetryable(
        `${placeOf(c)} holds more than ${maxListed} objects, too many to watch by listing: give the connection a narrower prefix`,
        'S3TooManyObjects',
      );
  } while (token);
  return objects;
}

const parseCursor = (cursor: string): Cursor => JSON.parse(cursor) as Cursor;

export async function pollCreatedObjects(c: S3Connection, cursor: string | undefined): Promise<EventBatch> {
  const objects = (await listAll(c)).filter((o) => o.Key && o.LastModified);
  const since = cursor ? parseCursor(cursor) : undefined;
  const sinceMs = since ? Date.parse(since.at) : 0;
  const seenAtSince = new Set(since?.keys ?? []);
  const fresh = since
    ? objects
        .filter((o) => {
          const t = o.LastModified!.getTime();
          return t > sinceMs || (t === sinceMs && !seenAtSince.has(o.Key!));
        })
        .sort((a, b) => a.LastModified!.getTime() - b.LastModified!.getTime() || a.Key!.localeCompare(b.Key!))
    : []; // a new trigger reports what is put after it, not the bucket's history

  const newestMs = Math.max(sinceMs, ...objects.map((o) => o.LastModified!.getTime()));
  const atNewest = objects.filter((o) => o.LastModified!.getTime() === newestMs).map((o) => o.Key!);
  const next: Cursor =
    newestMs === sinceMs && since
      ? { at: since.at, keys: [...new Set([...since.keys, ...atNewest])] }
      : // An empty prefix starts from the epoch, not the workers' clock: S3's may differ, and all that comes is new.
        { at: new Date(newestMs).toISOString(), keys: atNewest };

  return {
    events: fresh.map((o) => {
      const modified = o.LastModified!.toISOString();
      return {
        // A new version of a key is a new event; the same version seen twice is not.
        id: `${o.Key}@${modified}`,
        occurred_at: modified,
        data: {
          bucket: c.config.bucket,
          key: o.Key!.slice(c.config.prefix.length),
          size: o.Size ?? 0,
          etag: o.ETag ?? null,
          last_modified: modified,
        },
      };
    }),
    cursor: JSON.stringify(next),
  };
}
