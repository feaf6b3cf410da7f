// The web process's adapters (services/adapters.ts): the worker's own code for connecting, OAuth providers, source
// search, page pictures and mail, handed to createApp here, where anything may be imported. scripts/web.ts and every
// app the tests start take these same ones.
import type { Adapters } from '../services/adapters';
import { checkConnection, completeConnectionConfig, listConnectionTools } from '../activities/connectors/check';
import { oauthProvider, revokeTokens } from '../activities/connectors/oauth/provider';
import { retrieve } from '../activities/sources/retrieval';
import { pagePicture } from '../activities/sources/page-pictures';
import { externalToolHandlers } from '../activities/tools/handlers';

export function apiAdapters(): Adapters {
  return {
    connections: { check: checkConnection, complete: completeConnectionConfig, listTools: listConnectionTools },
    oauth: { provider: oauthProvider, revokeTokens },
    sources: { retrieve, pagePicture },
    // The email tool's sender, so account mail leaves the way an agent's does.
    mail: async (smtp, message) => {
      await externalToolHandlers['email.send']!(
        { to: message.to, subject: message.subject, text: message.text },
        { idempotencyKey: message.key, http: { allowHosts: [] }, smtp },
      );
    },
  };
}
