// What a connector's code provides (its data is in model/connectors/): a check that connects the way a run would,
// and a handler per tool (./implementation.ts). Handlers get the connection opened (settings, credentials, the account's token), never a
// row, and reach its system with the connector's production client library.
import type { z } from 'zod';
import type { ToolDefinition } from '../../model/tool-definition';
import type { ConnectorKind } from '../../model/connectors';
import type { TokenOptions } from './oauth/tokens';
import type { ConnectorLimits } from '../../model/connection';

/** The parts of a connector's definition its code is typed by. */
export interface ConnectorShape {
  config: z.ZodTypeAny;
  credentials: z.ZodTypeAny;
  tools: Record<string, ToolDefinition>;
}

export interface OpenedConnection<D extends ConnectorShape = ConnectorShape> {
  name: string;
  kind: ConnectorKind;
  config: z.infer<D['config']>;
  credentials: z.infer<D['credentials']>;
  /** Changes whenever the connection does: the key for a client kept between calls (clientCache). */
  version: string;
  limits: ConnectorLimits;
  /**
   * An access token of the oauth2 account its settings name (definition.account), refreshed as it expires and when
   * asked to (`{refresh: true, rejected}` after a 401). Undefined when it names none.
   */
  accountToken?: (opts?: TokenOptions) => Promise<string>;
}

/** What happened since a poller's cursor: the events in order, and the cursor to ask from next time. */
export interface EventBatch {
  events: {
    /** Unique within the event kind and connection: triggers drop an event they have seen (the dedupe key). */
    id: string;
    occurred_at?: string;
    /** What a run started by it gets as its item. */
    data: Record<string, unknown>;
    /** Files that come with it (a message's attachments): stored as files of its run, listed in its item. */
    files?: { name: string; contentType: string; content: Buffer }[];
    /**
     * The cursor just past this event, when the source can go on from any event: a poll that stops before the end
     * (its agent paused) records how far it got. Without it such a poll keeps the cursor it started from.
     */
    cursor?: string;
  }[];
  cursor: string;
}

/**
 * Reads the events of one kind since `cursor`. Without a cursor it answers none and the cursor of now: a new trigger
 * starts from what happens after it was made, not from the system's history.
 */
export type EventPoller<D extends ConnectorShape> = (
  connection: OpenedConnection<D>,
  cursor: string | undefined,
  /** The trigger's choices, checked against the event's options schema (model/connectors/definition.ts). */
  options?: Record<string, unknown>,
) => Promise<EventBatch>;

/**
 * Clients kept per connection version (a changed connection gets a new one) and closed when idle for five
 * minutes, like the SQL pools and MCP sessions.
 */
export function clientCache<C>(close: (client: C) => Promise<void> | void, idleMs = 5 * 60_000) {
  const clients = new Map<string, { client: Promise<C>; timer: NodeJS.Timeout }>();
  const drop = (key: string, client: Promise<C>) => {
    if (clients.get(key)?.client !== client) return;
    clients.delete(key);
    void client.then(close, () => undefined);
  };
  return (key: string, open: () => Promise<C>): Promise<C> => {
    const cached = clients.get(key);
    const client = cached?.client ?? open();
    if (cached) clearTimeout(cached.timer);
    // A client that failed to open is not kept: the next call tries again.
    if (!cached) client.catch(() => clients.get(key)?.client === client && clients.delete(key));
    const timer = setTimeout(() => drop(key, client), idleMs);
    timer.unref();
    clients.set(key, { client, timer });
    return client;
  };
}
