// Every connector the service has, by kind. A connector is added here and in activities/connectors/index.ts.
import type { z } from 'zod';
import type { ToolDefinition } from '../tool-definition';
import type { ConnectorDefinition } from './definition';
import { caldavConnector } from './caldav';
import { duckdbConnector } from './duckdb';
import { emailConnector } from './email';
import { hubspotConnector } from './hubspot';
import { s3Connector } from './s3';
import { slackConnector } from './slack';
import { stripeConnector } from './stripe';

export const connectorDefinitions = {
  duckdb: duckdbConnector,
  email: emailConnector,
  s3: s3Connector,
  slack: slackConnector,
  hubspot: hubspotConnector,
  stripe: stripeConnector,
  caldav: caldavConnector,
};

export type ConnectorKind = keyof typeof connectorDefinitions;
export const connectorKinds = Object.keys(connectorDefinitions) as ConnectorKind[];

export const isConnectorKind = (kind: string): kind is ConnectorKind => Object.hasOwn(connectorDefinitions, kind);

export const connectorOf = (kind: ConnectorKind): ConnectorDefinition =>
  connectorDefinitions[kind] as unknown as ConnectorDefinition;

type Defs = typeof connectorDefinitions;
type ToolsOf<K extends ConnectorKind> = Defs[K]['tools'];
/** Every connector's tools in one map, by full name (`duckdb.query`), with their literal types. */
export type ConnectorTools = { [K in ConnectorKind]: ToolsOf<K> }[ConnectorKind] extends infer U
  ? (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void
    ? I
    : never
  : never;

export const connectorTools = Object.assign(
  {},
  ...Object.values(connectorDefinitions).map((d) => d.tools),
) as ConnectorTools & Record<string, ToolDefinition>;

/** The connector whose tool this is (`duckdb.query` → duckdb). */
export function connectorOfTool(tool: string): ConnectorKind | undefined {
  const kind = tool.split('.')[0];
  return isConnectorKind(kind) && Object.hasOwn(connectorDefinitions[kind].tools, tool) ? kind : undefined;
}

export type ConnectorConfig<K extends ConnectorKind> = z.infer<Defs[K]['config']>;
