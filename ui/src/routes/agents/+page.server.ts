import { api } from '$lib/server/api';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ url }) => {
  const agents = await api.listAgents({ limit: 100, cursor: url.searchParams.get('cursor') });
  return { agents: agents.data, nextCursor: agents.next_cursor };
};
