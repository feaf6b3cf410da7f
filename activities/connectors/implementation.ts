// What a connector's code implements (./connector.ts has the opened connection and events it works with): a check,
// a handler per tool and its pollers. Apart from ./connector.ts because a handler gets the tool context, and the
// tool context opens connections: the types of an opened connection must not import the context back.
import type { z } from 'zod';
import type { ToolContext } from '../tools/tool-context';
import type { ConnectorShape, EventPoller, OpenedConnection } from './connector';
import type { ConnectionFound, ConnectorLimits } from '../../model/connection';

type ToolsOf<D extends ConnectorShape> = D['tools'];
export type ConnectorHandler<D extends ConnectorShape, T extends keyof ToolsOf<D>> = (
  input: z.infer<ToolsOf<D>[T]['input']>,
  connection: OpenedConnection<D>,
  ctx: ToolContext,
) => Promise<unknown>;

export interface ConnectorImplementation<D extends ConnectorShape> {
  /** Connects with the settings and credentials given and says what it found, or throws the reason. */
  check(connection: OpenedConnection<D>): Promise<ConnectionFound>;
  /** Settings to store: completed or normalized from what was given (an absolute path, a discovered URL). */
  complete?(config: z.infer<D['config']>, limits: ConnectorLimits): Promise<z.infer<D['config']>>;
  handlers: { [T in keyof ToolsOf<D>]: ConnectorHandler<D, T> };
  /** A poller per event of the definition that is read by polling (event triggers run them in a workflow). */
  pollers?: Record<string, EventPoller<D>>;
}

export const implement = <D extends ConnectorShape>(_definition: D, impl: ConnectorImplementation<D>) => impl;
