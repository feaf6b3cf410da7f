// Reading what happened in a connected system since an event trigger's cursor: a connector's poller, or new rows of
// a SQL table. The connection is opened for the trigger's workspace as a run's would be (connected, credentials
// opened here only).
import { ApplicationFailure } from '@temporalio/common';
import { connectionByName } from '../../db/connections';
import { isSqlKind } from '../../model/connection';
import { isConnectorKind } from '../../model/connectors';
import { eventsOf, type SqlRowEventOptions } from '../../model/connectors/events';
import type { EventConfig } from '../../model/trigger';
import type { EventBatch } from './connector';
import { sqlClientResolver, type Deps } from './connections';
import { connectionOpener } from './opened';
import type { SqlClient } from './sql/client';
import { connectorImplementations } from '.';

/** Rows read at one poll at most; the rest come at the next. */
const pageSize = 100;

/**
 * New rows after the cursor (the last value of the trigger's column), in the column's order. Without a cursor, none:
 * the cursor becomes the column's highest value now.
 */
async function newRows(
  client: SqlClient,
  options: SqlRowEventOptions,
  cursor: string | undefined,
): Promise<EventBatch> {
  const { table, column } = options;
  if (cursor === undefined) {
    const [top] = await client.knex(table).max({ last: column });
    return { events: [], cursor: JSON.stringify((top as { last: unknown }).last ?? null) };
  }
  const last: unknown = JSON.parse(cursor);
  const query = client.knex(table).select('*').orderBy(column).limit(pageSize);
  if (last !== null) query.where(column, '>', last as string | number);
  const rows = (await query) as Record<string, unknown>[];
  if (rows.length === 0) return { events: [], cursor };
  return {
    events: rows.map((row) => ({ id: `${table}:${String(valueOf(row[column]))}`, data: row })),
    cursor: JSON.stringify(valueOf(rows[rows.length - 1][column])),
  };
}

/** A column's value as the cursor keeps it (a time as its ISO text). */
const valueOf = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

export async function pollEvents(
  deps: Deps,
  workspaceId: string,
  config: EventConfig,
  cursor: string | undefined,
): Promise<EventBatch> {
  const user = { workspaceId, connections: [config.connection] };
  const row = await connectionByName(deps.knex, workspaceId, config.connection);
  if (!row)
    throw ApplicationFailure.nonRetryable(
      `there is no connection "${config.connection}" in this workspace: connect it in Integrations`,
      'ConnectionMissing',
    );
  const source = eventsOf(row.kind)[config.event];
  if (!source)
    throw ApplicationFailure.nonRetryable(
      `connection "${config.connection}" (${row.kind}) has no event "${config.event}"`,
      'UnknownEvent',
    );
  const options = source.options.parse(config.options) as Record<string, unknown>;
  if (isSqlKind(row.kind)) {
    const client = await sqlClientResolver(deps, user)(config.connection);
    return newRows(client, options as SqlRowEventOptions, cursor);
  }
  if (!isConnectorKind(row.kind)) throw new Error(`${row.kind} connections have no events`);
  const poller = connectorImplementations[row.kind].pollers?.[config.event];
  if (!poller) throw new Error(`the ${row.kind} connector does not poll "${config.event}"`);
  return poller(await connectionOpener(deps, user)(row.kind, config.connection), cursor, options);
}
