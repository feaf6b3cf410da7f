// A run file for whoever holds the Run Mode link, streamed from the public API: always a download, never sniffed,
// and sandboxed if a browser renders it anyway (api/file-download.ts).
import { downloadHeaders } from '$api/file-download';
import { runModeApi } from '$lib/server/run-mode-api';
import type { RequestHandler } from './$types';

export const GET: RequestHandler = async ({ params }) => {
  const upstream = await runModeApi.file(params.token, params.runId, params.fileId);
  return new Response(upstream.body, {
    headers: {
      'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream',
      'content-disposition': attachment(upstream.headers.get('content-disposition')),
      'referrer-policy': 'same-origin',
      ...downloadHeaders,
    },
  });
};

/** The API's Content-Disposition when it is an attachment (it always is), else a bare attachment. */
const attachment = (given: string | null) => (given && /^attachment\b/i.test(given) ? given : 'attachment');
