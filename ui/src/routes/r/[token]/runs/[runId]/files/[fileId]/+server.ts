// A run file for whoever holds the Run Mode link, streamed from the public API.
import { runModeApi } from '$lib/server/run-mode-api';
import type { RequestHandler } from './$types';

export const GET: RequestHandler = async ({ params }) => {
  const upstream = await runModeApi.file(params.token, params.runId, params.fileId);
  return new Response(upstream.body, {
    headers: {
      'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream',
      'content-disposition': upstream.headers.get('content-disposition') ?? 'attachment',
    },
  });
};
