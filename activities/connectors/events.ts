// Reading what happened in a connected system since an event trigger's cursor: a connector's poller, or new rows of
// a SQL table (with its late-commit window: see newRows). The connection is opened for the trigger's workspace as a run's would be (connected, credentials
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
/** The most rows of the late-commit window read again at one poll (their column only, newest first). */
const maxWindowRows = 10_000;

type Value = string | number | null;

/**
 * Where a table's trigger has read up to: `last`, the column's highest value read; `marks`, when each poll within the
 * late-commit window (and the last one before it) had read up to what, oldest first, as [epoch ms, value]. A poll
 * reads again the rows above the value of the newest mark older than the window: a row that commits late (its
 * transaction took a lower value than a row read already) is read while it is within the window.
 */
interface RowCursor {
  last: Value;
  marks: [number, Value][];
}

/** Cursors written before the window was kept are the last value alone: they start keeping marks now. */
function parseRowCursor(cursor: string): RowCursor {
  const parsed: unknown = JSON.parse(cursor);
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && 'last' in parsed) {
    const c = parsed as Partial<RowCursor>;
    return { last: c.last ?? null, marks: Array.isArray(c.marks) ? c.marks : [] };
  }
  return { last: parsed as Value, marks: [] };
}

/** The marks still needed at `now`: those within the window and the newest one before it (the window's floor). */
function keptMarks(cursor: RowCursor, now: number, windowMs: number): [number, Value][] {
  const marks = [...cursor.marks].sort((a, b) => a[0] - b[0]);
  let floor = -1;
  marks.forEach(([at], i) => {
    if (at <= now - windowMs) floor = i;
  });
  return floor > 0 ? marks.slice(floor) : marks;
}

const withMark = (marks: [number, Value][], now: number, last: Value): [number, Value][] =>
  marks.length > 0 && JSON.stringify(marks[marks.length - 1][1]) === JSON.stringify(last)
    ? marks
    : [...marks, [now, last]];

const rowEventId = (table: string, value: unknown) => `${table}:${String(valueOf(value))}`;

/** The event ids among these that the trigger has handled already (a run, a batch, filtered out). */
export type KnownEvents = (ids: string[]) => Promise<Set<string>>;

/**
 * New rows after the cursor (the last value of the trigger's column), in the column's order, after the rows of the
 * late-commit window that the trigger had not seen. Without a cursor, none: the cursor becomes the column's highest
 * value now. Each new row's event carries the cursor just past it, so a poll that stops early records exactly how
 * far it got.
 */
async function newRows(
  client: SqlClient,
  options: SqlRowEventOptions,
  cursor: string | undefined,
  known: KnownEvents,
  now: number,
): Promise<EventBatch> {
  const { table, column } = options;
  const windowMs = (options.late_commit_seconds ?? 600) * 1000;
  if (cursor === undefined) {
    const [top] = await client.knex(table).max({ last: column });
    const last = valueOf((top as { last: unknown }).last ?? null) as Value;
    return { events: [], cursor: JSON.stringify({ last, marks: [[now, last]] } satisfies RowCursor) };
  }
  const read = parseRowCursor(cursor);
  const marks = keptMarks(read, now, windowMs);
  const floor = marks.length > 0 ? marks[0][1] : read.last;

  // The window: rows at or below the cursor, above its floor, that no poll had seen (committed since).
  const late: Record<string, unknown>[] = [];
  if (read.last !== null && JSON.stringify(floor) !== JSON.stringify(read.last)) {
    const values = (
      (await client
        .knex(table)
        .select({ value: column })
        .where(column, '<=', read.last)
        .modify((q) => {
          if (floor !== null) void q.where(column, '>', floor);
        })
        .orderBy(column, 'desc')
        .limit(maxWindowRows)) as { value: unknown }[]
    ).map((r) => r.value);
    const seen = await known(values.map((v) => rowEventId(table, v)));
    const unseen = values.filter((v) => !seen.has(rowEventId(table, v))).reverse();
    if (unseen.length > 0)
      late.push(
        ...((await client
          .knex(table)
          .select('*')
          .whereIn(column, unseen.slice(0, pageSize) as string[])
          .orderBy(column)) as Record<string, unknown>[]),
      );
  }

  const query = client
    .knex(table)
    .select('*')
    .orderBy(column)
    .limit(Math.max(pageSize - late.length, 1));
  if (read.last !== null) query.where(column, '>', read.last);
  const rows = (await query) as Record<string, unknown>[];
  const after = (last: Value): RowCursor => ({ last, marks: withMark(marks, now, last) });
  const last = rows.length > 0 ? (valueOf(rows[rows.length - 1][column]) as Value) : read.last;
  return {
    events: [
      ...late.map((row) => ({ id: rowEventId(table, row[column]), data: row })),
      ...rows.map((row) => ({
        id: rowEventId(table, row[column]),
        data: row,
        cursor: JSON.stringify(after(valueOf(row[column]) as Value)),
      })),
    ],
    cursor: JSON.stringify(after(last)),
  };
}

/** A column's value as the cursor keeps it (a time as its ISO text). */
const valueOf = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

/**
 * `known`: which events the trigger has handled already, so the rows a poll reads again (the late-commit window of a
 * table) start nothing twice. Without it every row of the window counts as unseen.
 */
export async function pollEvents(
  deps: Deps,
  workspaceId: string,
  config: EventConfig,
  cursor: string | undefined,
  read: { known?: KnownEvents; now?: number } = {},
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
    return newRows(
      client,
      options as SqlRowEventOptions,
      cursor,
      read.known ?? (async () => new Set()),
      read.now ?? Date.now(),
    );
  }
  if (!isConnectorKind(row.kind)) throw new Error(`${row.kind} connections have no events`);
  const poller = connectorImplementations[row.kind].pollers?.[config.event];
  if (!poller) throw new Error(`the ${row.kind} connector does not poll "${config.event}"`);
  return poller(await connectionOpener(deps, user)(row.kind, config.connection), cursor, options);
}
