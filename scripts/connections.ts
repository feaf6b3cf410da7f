// Connections every Cadre process makes, each failing with one line that says what to fix.
import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { databaseUrl, type CadreConfig } from '../cadre.config';
import { createKnex } from '../db/knex';
import { migrate, MissingVectorExtensionError } from '../db/migrate';
import type { TemporalConfig } from '../temporal.config';
import { StartupError } from './fail-fast';
import { tracingClientInterceptors } from '../services/telemetry/tracing';

export async function connectDatabase(
  config: CadreConfig,
  opts: { migrate?: boolean; poolMax?: number } = {},
): Promise<{ knex: Knex; version: string }> {
  const knex = createKnex(databaseUrl(config), { max: opts.poolMax });
  const where = config.db.embedded
    ? `the embedded Postgres on 127.0.0.1:${config.db.embeddedPort}`
    : 'the Postgres at DATABASE_URL';
  try {
    const version = (await knex.raw('show server_version')).rows[0].server_version as string;
    if (opts.migrate) await migrate(knex);
    return { knex, version };
  } catch (err) {
    await knex.destroy();
    if (err instanceof MissingVectorExtensionError) throw new StartupError(err.message);
    throw new StartupError(`cannot use ${where}: ${(err as Error).message || (err as Error).name}`);
  }
}

export async function connectTemporal(
  tc: TemporalConfig,
): Promise<{ connection: Connection; client: Client; version: string }> {
  try {
    const connection = await Connection.connect({
      address: tc.address,
      tls: tc.tls,
      apiKey: tc.apiKey,
      connectTimeout: '5 seconds',
    });
    const info = await connection.workflowService.getSystemInfo({});
    const client = new Client({ connection, namespace: tc.namespace, interceptors: tracingClientInterceptors() });
    return { connection, client, version: info.serverVersion ?? 'unknown' };
  } catch (err) {
    throw new StartupError(`cannot reach Temporal at ${tc.address} (TEMPORAL_ADDRESS): ${(err as Error).message}`);
  }
}
