import { sourcesApi } from '$lib/server/sources-api';
import type { RequestHandler } from './$types';

// The page picture of a citation, through the console (the browser cannot hold the API key). The boxes are drawn
// by the page over the picture, so the plain picture is all that is fetched.
export const GET: RequestHandler = async ({ params }) => {
  const upstream = await sourcesApi.pageImage(params.id);
  return new Response(upstream.body, {
    status: 200,
    headers: {
      'content-type': upstream.headers.get('content-type') ?? 'image/png',
      // A passage's page never changes (a new version makes new passages), so the browser may keep it.
      'cache-control': 'private, max-age=3600',
    },
  });
};
