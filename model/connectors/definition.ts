// What a connector is, as data (DESIGN.md "Connections, connectors, events"): its settings and credentials, the typed
// tools it gives agents and the events it can report. Pure, so the API validates connections and agents with it and
// the console draws its forms from it; the handlers live in activities/connectors/<kind>/.
import { z } from 'zod';
import type { ToolDefinition } from '../tool-definition';

/** The kinds of system the spec names (section 2, "Connectable kinds of system"). */
export const connectorCategories = [
  'email',
  'crm',
  'chat',
  'storage',
  'database',
  'payments',
  'calendar',
  'api',
  'account',
] as const;
export type ConnectorCategory = (typeof connectorCategories)[number];

export interface ConnectorEvent {
  description: string;
  /** What an event trigger chooses (a folder, a prefix, a table); none when absent. */
  options?: z.ZodTypeAny;
}

export interface ConnectorDefinition<
  Config extends z.ZodTypeAny = z.ZodTypeAny,
  Credentials extends z.ZodTypeAny = z.ZodTypeAny,
  Tools extends Record<string, ToolDefinition> = Record<string, ToolDefinition>,
> {
  kind: string;
  /** As people know the system: "Email (IMAP and SMTP)", "Slack". */
  label: string;
  category: ConnectorCategory;
  /** One sentence for the Integrations page. */
  description: string;
  /** What is not secret: stored as given, answered by the API. */
  config: Config;
  /** What is: sealed at rest, never answered. The default fills in what a create request leaves out. */
  credentials: Credentials;
  /** Named `<kind>.<tool>`; every input has a `connection` argument naming one connection of this kind. */
  tools: Tools;
  /** What can happen in the system that an event trigger may start a run on (issue "Event triggers"). */
  events: Record<string, ConnectorEvent>;
  /** Where the connection points, for messages and the console: `imap.example.com as ap@example.com`. */
  where(config: z.infer<Config>): string;
  /** The tools this connection offers its agents (a read-only one offers fewer); all of them when absent. */
  toolsFor?(config: z.infer<Config>): (keyof Tools & string)[];
  /** The oauth2 connection of the workspace it acts through, when its settings name one. */
  account?(config: z.infer<Config>): string | undefined;
  /** Where that account's access token is sent (the API the settings point at): checked against its provider. */
  tokenDestination?(config: z.infer<Config>): string;
}

/** Checks a definition's shape at compile time and keeps its literal tool names. */
export const defineConnector = <
  C extends z.ZodTypeAny,
  K extends z.ZodTypeAny,
  T extends Record<string, ToolDefinition>,
>(
  d: ConnectorDefinition<C, K, T>,
) => d;

/** The `connection` argument of a connector's tools. */
export const connectionArg = (what: string) =>
  z.string().min(1).max(60).describe(`the name of ${what} connection the agent lists in "connections"`);
