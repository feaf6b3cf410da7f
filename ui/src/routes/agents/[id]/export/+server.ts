// The agent as a JSON file, streamed from the API (which names the file), for import elsewhere.
import { agentsApi } from '$lib/server/agents-api';
import type { RequestHandler } from './$types';

export const GET: RequestHandler = async ({ params }) => {
  const upstream = await agentsApi.export(params.id);
  return new Response(upstream.body, {
    headers: {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
      'content-disposition': upstream.headers.get('content-disposition') ?? 'attachment; filename="agent.json"',
    },
  });
};
