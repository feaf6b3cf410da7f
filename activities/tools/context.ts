// What a tool handler gets besides its input, the same for a tool node and for a model's tool call.
import type { ActivityDeps } from '../deps';
import { sqlClientResolver } from '../connectors/connections';
import { connectionOpener } from '../connectors/opened';
import { runFileReader, runFileSaver } from '../../db/run-files';
import type { ToolContext } from './tool-context';
import { inboxReplies } from '../inbox-reply';
import type { EmailConnection } from '../connectors/email/imap';

export function toolContext(
  deps: ActivityDeps,
  call: { runId: string; key: string; connections: readonly string[] },
): ToolContext {
  return {
    idempotencyKey: call.key,
    http: deps.config.http,
    smtp: deps.config.smtp,
    saveFile: runFileSaver(deps.knex, call.runId, call.key),
    readFile: runFileReader(deps.knex, call.runId),
    sqlClient: sqlClientResolver(deps, call),
    connection: connectionOpener(deps, call),
    // A thread's mailbox is the one its agent's own trigger reads: replies may use it without the agent listing it.
    inbox: inboxReplies(
      deps.knex,
      call.runId,
      deps.config.inbox.domain,
      async (name) =>
        (await connectionOpener(deps, { runId: call.runId, connections: [name] })('email', name)) as EmailConnection,
    ),
  };
}
