// Cloud file storage over the S3 API (Amazon S3 and the services that speak it: MinIO, Cloudflare R2, ...): list
// a bucket, bring its objects into a run as files, and, when the connection allows writes, put a run's files there.
// A connection sees one prefix of one bucket: every key its tools take or answer is relative to that prefix, and a
// key cannot climb out of it.
import { z } from 'zod';
import { connectionArg, defineConnector } from './definition';

const connection = connectionArg('an S3 storage');

/** A key below the connection's prefix: no "..", ".", empty segments or leading slash to climb or hide with. */
export const relativeKey = z
  .string()
  .min(1)
  .max(1000)
  .refine((key) => !key.startsWith('/'), 'a key is relative to the connection\'s prefix: leave out the leading "/"')
  .refine(
    (key) =>
      key.split('/').every((part, i, all) => (part !== '' || i === all.length - 1) && part !== '..' && part !== '.'),
    'a key cannot contain "..", "." or empty segments ("//")',
  );

/** The prefix a connection is limited to, stored with one trailing slash ("" for the whole bucket). */
export const normalizePrefix = (prefix: string) => {
  const trimmed = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? '' : `${trimmed}/`;
};

export const s3ConfigSchema = z.object({
  bucket: z
    .string()
    .min(3)
    .max(63)
    .regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, 'a bucket name is lowercase letters, digits, dots and hyphens')
    .describe('the bucket, e.g. "acme-invoices"'),
  region: z
    .string()
    .min(1)
    .max(40)
    .default('us-east-1')
    .describe('the bucket\'s region, e.g. "eu-central-1" ("auto" for Cloudflare R2)'),
  endpoint: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe('for S3-compatible services only (MinIO, R2, ...): their API URL; leave empty for Amazon S3'),
  force_path_style: z
    .boolean()
    .default(false)
    .describe(
      'address the bucket in the path (https://host/bucket/key), as MinIO and many S3-compatible services need',
    ),
  prefix: z
    .string()
    .max(500)
    .default('')
    .refine((p) => !p.split('/').some((part) => part === '..' || part === '.'), 'the prefix cannot contain ".." or "."')
    .transform(normalizePrefix)
    .describe('the folder the connection is limited to, e.g. "inbound/" (empty for the whole bucket)'),
  allow_writes: z
    .boolean()
    .default(false)
    .describe(
      'let agents upload files into the prefix (each upload waits for a reviewer unless the policy says otherwise)',
    ),
  max_file_mb: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(25)
    .describe('the largest object a run downloads or uploads, in megabytes'),
});
export type S3Config = z.infer<typeof s3ConfigSchema>;

export const s3CredentialsSchema = z.object({
  access_key_id: z.string().min(1).max(200).describe('the access key ID'),
  secret_access_key: z.string().min(1).max(200).describe('the secret access key'),
  session_token: z.string().max(5000).optional().describe('for temporary credentials only: the session token'),
});

const readTools = ['s3.list', 's3.download'] as const;

export const s3Connector = defineConnector({
  kind: 's3',
  label: 'S3 cloud storage',
  category: 'storage',
  description: 'Files in an Amazon S3 bucket or an S3-compatible store (MinIO, R2): list, download, upload.',
  config: s3ConfigSchema,
  credentials: s3CredentialsSchema,
  tools: {
    's3.list': {
      name: 's3.list',
      description:
        "List the objects under a folder of an S3 connection in key order (keys are relative to the connection's " +
        "prefix), a page at a time; pass the answer's next_token to read the next page.",
      input: z.object({
        connection,
        prefix: z
          .string()
          .max(1000)
          .default('')
          .describe('a folder or key beginning below the connection\'s prefix, e.g. "2024/"; empty for all'),
        recursive: z
          .boolean()
          .default(true)
          .describe('false lists one folder level: its objects, and its sub-folders under "folders"'),
        limit: z.number().int().min(1).max(1000).default(100),
        next_token: z.string().max(2000).optional().describe('the next_token of the previous page'),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    's3.download': {
      name: 's3.download',
      description:
        "Download an object of an S3 connection into the run as a file (up to the connection's size limit); answers " +
        "the file, which later steps and the run's files list can use.",
      input: z.object({
        connection,
        key: relativeKey.describe("the object's key, relative to the connection's prefix"),
        file_name: z
          .string()
          .min(1)
          .max(200)
          .optional()
          .describe("the run file's name; the key's last part if not given"),
      }),
      sideEffect: 'files',
      approvalDefault: 'never',
    },
    's3.upload': {
      name: 's3.upload',
      description:
        "Upload a file of this run (by its file id or name) to a key under an S3 connection's prefix; a key ending in " +
        '"/" puts it in that folder under its own name. Refuses to replace an object unless overwrite is set.',
      input: z.object({
        connection,
        file: z.string().min(1).max(300).describe('the run file: its file_id, or its name'),
        key: relativeKey.describe('where to put it, relative to the connection\'s prefix: "out/report.pdf" or "out/"'),
        content_type: z.string().max(200).optional().describe("the object's content type; the run file's if not given"),
        overwrite: z.boolean().default(false).describe('replace an object already at that key'),
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
  },
  events: {
    'object.created': {
      description: "An object was put under the connection's prefix (a new one, or a new version of one).",
    },
  },
  where: (config) =>
    `s3://${config.bucket}/${config.prefix}${config.endpoint ? ` at ${new URL(config.endpoint).host}` : ''}`,
  toolsFor: (config) => (config.allow_writes ? [...readTools, 's3.upload'] : [...readTools]),
});
