// The Inbox in the console: an agent's address and threads, a thread's messages, and the replies its runs drafted
// that wait for a reviewer (DESIGN.md convention 10).
import type { Schemas } from '$api/client';
import { body, client } from './api';

export type InboxMessage = Schemas['InboxMessage'];

export const inboxApi = {
  threads: (agentId: string) => body(client.GET('/agents/{id}/inbox', { params: { path: { id: agentId } } })),
  thread: (id: string) => body(client.GET('/inbox/threads/{id}', { params: { path: { id } } })),
  /** The reply drafts (email.reply calls) of these runs that a reviewer has not decided yet. */
  draftsOf: async (runIds: string[]) => {
    const pages = await Promise.all(
      runIds.map((run_id) =>
        body(client.GET('/approvals', { params: { query: { run_id, status: 'pending', limit: 500 } } })),
      ),
    );
    return pages.flatMap((p) => p.data).filter((a) => a.tool === 'email.reply');
  },
};
