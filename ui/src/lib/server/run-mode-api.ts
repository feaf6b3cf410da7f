// Run Mode's calls: the public endpoints a link's token opens. They go without the console's credentials
// (publicFetch), so the page can do exactly what anyone holding the link can do, and nothing more.
import { body, client, download, publicFetch } from './api';

export const runModeApi = {
  link: (token: string) =>
    body(client.GET('/public/run-links/{token}', { params: { path: { token } }, fetch: publicFetch })),
  start: (token: string, input: string, clientAddress: string) =>
    body(
      client.POST('/public/run-links/{token}/runs', {
        params: { path: { token } },
        body: { input },
        // The API's rate limit counts per person, not per console.
        headers: { 'x-forwarded-for': clientAddress },
        fetch: publicFetch,
      }),
    ),
  run: (token: string, runId: string) =>
    body(
      client.GET('/public/run-links/{token}/runs/{runId}', { params: { path: { token, runId } }, fetch: publicFetch }),
    ),
  file: (token: string, runId: string, fileId: string) =>
    download(
      client.GET('/public/run-links/{token}/runs/{runId}/files/{fileId}', {
        params: { path: { token, runId, fileId } },
        headers: { accept: '*/*' },
        parseAs: 'stream',
        fetch: publicFetch,
      }),
    ),
};
