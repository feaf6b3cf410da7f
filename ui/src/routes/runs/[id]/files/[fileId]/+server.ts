import { downloadHeaders } from '$api/file-download';
import { api } from '$lib/server/api';
import type { RequestHandler } from './$types';

// The browser cannot call the API itself (the key stays on the server), so downloads go through here and the
// bytes are streamed on, never buffered: always as a download, never sniffed, and sandboxed if a browser renders it
// anyway (api/file-download.ts).
const PASSED_HEADERS = ['content-type', 'content-length', 'content-disposition', 'last-modified', 'etag'];

export const GET: RequestHandler = async ({ params }) => {
  const upstream = await api.downloadRunFile(params.id, params.fileId);
  const headers = new Headers({ 'cache-control': 'private, no-store', ...downloadHeaders });
  // fetch has already decoded a compressed body, so the upstream length would be wrong.
  const decoded = upstream.headers.has('content-encoding');
  for (const name of PASSED_HEADERS) {
    if (decoded && name === 'content-length') continue;
    const value = upstream.headers.get(name);
    if (value) headers.set(name, value);
  }
  if (!/^attachment\b/i.test(headers.get('content-disposition') ?? ''))
    headers.set('content-disposition', 'attachment');
  return new Response(upstream.body, { status: 200, headers });
};
