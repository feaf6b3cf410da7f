// Connections as the API accepts them: a name agents refer to, a connector kind, what is not secret (config) and the
// credentials (sealed at rest, never answered). Pure, so the API, the worker and the agent checks share it.
import { z } from 'zod';

export const connectionKinds = ['postgres', 'mysql'] as const;
export type ConnectionKind = (typeof connectionKinds)[number];
export const connectionStatuses = ['connected', 'needs_reauthorization', 'revoked', 'failing'] as const;
export type ConnectionStatus = (typeof connectionStatuses)[number];

export const connectionName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,59}$/, 'lower-case letters, digits, - and _, starting with a letter (at most 60)');

/** A SQL database: PostgreSQL, or MySQL and MariaDB. */
export const sqlConfigSchema = z.object({
  host: z.string().trim().min(1).max(253).meta({ format: 'hostname', description: 'a host name or IP address' }),
  port: z.number().int().min(1).max(65535).optional(),
  database: z.string().min(1).max(128),
  user: z.string().min(1).max(128),
  ssl: z.boolean().default(false),
  /** Inserts and updates are refused unless the connection grants them. */
  allow_writes: z.boolean().default(false),
  /** A query answering more rows than this fails, and says so, rather than truncating silently. */
  row_limit: z.number().int().min(1).max(100_000).default(1000),
  statement_timeout_ms: z.number().int().min(100).max(300_000).default(10_000),
});
export type SqlConfig = z.infer<typeof sqlConfigSchema>;

export const sqlCredentialsSchema = z.object({ password: z.string().max(1000).default('') });
export type SqlCredentials = z.infer<typeof sqlCredentialsSchema>;

export const defaultPorts: Record<ConnectionKind, number> = { postgres: 5432, mysql: 3306 };

export const createConnectionSchema = z.object({
  name: connectionName,
  kind: z.enum(connectionKinds),
  config: sqlConfigSchema,
  credentials: sqlCredentialsSchema,
});

export const updateConnectionSchema = z
  .object({
    config: sqlConfigSchema.partial().optional(),
    credentials: sqlCredentialsSchema.optional(),
  })
  .refine((b) => b.config !== undefined || b.credentials !== undefined, 'change "config" or "credentials"');
