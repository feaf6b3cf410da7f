import { sourcesApi } from '$lib/server/sources-api';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => ({ source: await sourcesApi.get(params.id) });
