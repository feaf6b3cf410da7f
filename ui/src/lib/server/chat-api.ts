// Chat Mode as the console reads it (DESIGN.md convention 10). The streamed answer itself passes through
// routes/chat/[id]/ask/+server.ts, which relays the API's event stream to the browser as it arrives.
import type { paths, Schemas } from '$api/client';
import { apiFetch, body, client } from './api';

export type Conversation = Schemas['Conversation'];
export type ChatMessage = Schemas['ChatMessage'];
export type ChatModel = Schemas['ChatModel'];
export type ConversationDetail =
  paths['/chat/conversations/{id}']['get']['responses'][200]['content']['application/json'];

export const chatApi = {
  list: () => body(client.GET('/chat/conversations')),
  get: (id: string) => body(client.GET('/chat/conversations/{id}', { params: { path: { id } } })),
  create: (agentId?: string) =>
    body(client.POST('/chat/conversations', { body: agentId ? { agent_id: agentId } : {} })),
  /** The question, answered as the API's text/event-stream response (not read here: it is relayed). */
  ask: (id: string, text: string) =>
    apiFetch(`/v1/chat/conversations/${encodeURIComponent(id)}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ text }),
    }),
};
