// The events an event trigger can wait for, by the kind of connection: a connector's own (model/connectors/), and
// new rows of a SQL database's table. Pure, so the API checks a trigger with it and the console offers the choices.
import { z } from 'zod';
import { isSqlKind, type ConnectionKind } from '../connection';
import { connectorOf, isConnectorKind } from '.';

export interface EventSource {
  description: string;
  options: z.ZodTypeAny;
}

const sqlIdentifier = z
  .string()
  .regex(/^[A-Za-z_][\w$]*(\.[A-Za-z_][\w$]*)?$/, 'a table name, optionally schema.table');

/**
 * New rows of a table or view, told apart by a column whose values only grow (an id, a creation time). Concurrent
 * writers commit out of the column's order (a transaction that took id 1 may commit after one that took id 2 was
 * read), so each poll reads again the rows of the last `late_commit_seconds` and starts those it had not seen.
 */
export const sqlRowEventOptions = z.object({
  table: sqlIdentifier.describe('the table or view to watch'),
  column: z
    .string()
    .regex(/^[A-Za-z_][\w$]*$/, 'a column name')
    .describe('a column whose values only grow: an id or a creation time'),
  late_commit_seconds: z
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(600)
    .describe(
      'how long a row whose transaction commits after a later row was read is still picked up: each poll reads ' +
        'again the rows read this long ago (an id taken by a transaction still open is not visible in order)',
    ),
});
export type SqlRowEventOptions = z.infer<typeof sqlRowEventOptions>;

const noOptions = z.object({}).default({});

export function eventsOf(kind: ConnectionKind): Record<string, EventSource> {
  if (isSqlKind(kind))
    return {
      'row.created': {
        description: 'A row is added to a table: each new row is an item',
        options: sqlRowEventOptions,
      },
    };
  if (!isConnectorKind(kind)) return {};
  return Object.fromEntries(
    Object.entries(connectorOf(kind).events).map(([name, e]) => [
      name,
      { description: e.description, options: e.options ?? noOptions },
    ]),
  );
}
