import { error } from '@sveltejs/kit';
import { sourcesApi } from '$lib/server/sources-api';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params, url }) => {
  const number = Number(params.version);
  if (!Number.isInteger(number) || number < 1) error(404, `no version ${params.version}`);
  const [source, passages] = await Promise.all([
    sourcesApi.get(params.id),
    sourcesApi.versionPassages(params.id, number, url.searchParams.get('cursor')),
  ]);
  const version = source.versions?.find((v) => v.version === number);
  if (!version) error(404, `source "${source.name}" has no version ${number}`);
  return { source, version, passages: passages.data, nextCursor: passages.next_cursor };
};
