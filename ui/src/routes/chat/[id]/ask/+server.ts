import { error } from '@sveltejs/kit';
import { chatApi } from '$lib/server/chat-api';
import type { RequestHandler } from './$types';

// The browser's question, relayed to the API as the signed-in person; the answer's events flow back as they come.
export const POST: RequestHandler = async ({ params, request }) => {
  const { text } = (await request.json().catch(() => ({}))) as { text?: unknown };
  if (typeof text !== 'string' || !text.trim()) error(422, 'Ask something first.');
  const answer = await chatApi.ask(params.id, text);
  return new Response(answer.body, {
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  });
};
