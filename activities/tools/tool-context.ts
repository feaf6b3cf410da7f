// What a tool handler gets besides its input (built by ./context.ts for a tool node and a model's tool call alike).
// A module of types alone, so the connectors' handlers can name it without importing the handler table that
// imports them.
import type { SqlClient } from '../connectors/sql/client';
import type { OpenConnection } from '../connectors/opened';
import type { RunFile } from '../../db/run-files';
import type { InboxReplies } from '../inbox-reply';

export interface ToolContext {
  idempotencyKey: string;
  http: { allowHosts: readonly string[] };
  smtp: { url?: string; from: string };
  /**
   * Stores a file in the run; the same key stores it once however often a retry asks. A call saving several files
   * tells them apart by `part`.
   */
  saveFile?: (file: {
    name: string;
    contentType: string;
    content: Buffer;
    part?: string;
  }) => Promise<Record<string, unknown>>;
  /** A file of the run, by its id or name (db/run-files.ts); undefined when the run has none such. */
  readFile?: (ref: string) => Promise<RunFile | undefined>;
  /** A client of the named SQL connection of the agent (activities/connectors/connections.ts). */
  sqlClient?: (connection: string) => Promise<SqlClient>;
  /** Opens the named connection of the agent for a connector's tool (activities/connectors/opened.ts). */
  connection?: OpenConnection;
  /** The Inbox threads of the run's agent, for `email.reply`. */
  inbox?: InboxReplies;
}
