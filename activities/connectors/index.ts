// Every connector's code, by kind (its data: model/connectors/index.ts), and its tools as handlers of the tool
// activity: each call opens the connection its `connection` argument names, which the agent must list.
import { ApplicationFailure } from '@temporalio/common';
import { connectorKinds, type ConnectorKind } from '../../model/connectors';
import type { ToolContext } from '../tools/tool-context';
import type { ConnectorShape } from './connector';
import type { ConnectorHandler, ConnectorImplementation } from './implementation';
import { caldavImplementation } from './caldav';
import { duckdbImplementation } from './duckdb';
import { emailImplementation } from './email';
import { hubspotImplementation } from './hubspot';
import { s3Implementation } from './s3';
import { slackImplementation } from './slack';
import { stripeImplementation } from './stripe';

export const connectorImplementations: { [K in ConnectorKind]: ConnectorImplementation<ConnectorShape> } = {
  duckdb: duckdbImplementation as unknown as ConnectorImplementation<ConnectorShape>,
  email: emailImplementation as unknown as ConnectorImplementation<ConnectorShape>,
  s3: s3Implementation as unknown as ConnectorImplementation<ConnectorShape>,
  slack: slackImplementation as unknown as ConnectorImplementation<ConnectorShape>,
  hubspot: hubspotImplementation as unknown as ConnectorImplementation<ConnectorShape>,
  stripe: stripeImplementation as unknown as ConnectorImplementation<ConnectorShape>,
  caldav: caldavImplementation as unknown as ConnectorImplementation<ConnectorShape>,
};

type ToolHandler = (input: unknown, ctx: ToolContext) => Promise<unknown>;

export const connectorToolHandlers: Record<string, ToolHandler> = Object.fromEntries(
  connectorKinds.flatMap((kind) =>
    Object.entries(connectorImplementations[kind].handlers).map(([tool, handler]): [string, ToolHandler] => [
      tool,
      async (input, ctx) => {
        if (!ctx.connection) throw ApplicationFailure.nonRetryable(`${tool} runs only in an agent run`, 'NoRun');
        const name = (input as { connection: string }).connection;
        const call = handler as ConnectorHandler<ConnectorShape, string>;
        return call(input as never, await ctx.connection(kind, name), ctx);
      },
    ]),
  ),
);
